#!/bin/bash
# Two-byte characters, so a cut at an odd byte count falls inside one.
printf 'ééééé'
exit 0
