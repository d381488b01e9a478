#!/bin/bash
# A problem: exit 1 with a message.
echo "ntp is not synchronised"
exit 1
