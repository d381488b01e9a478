#!/bin/bash
# Writes to stdout without end: only the timeout stops it. $1 = file that receives the process group id.
echo $$ > "$1"
yes "flooding"
