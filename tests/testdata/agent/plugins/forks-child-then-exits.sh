#!/bin/bash
# Leaves a background child that still holds stdout, then reports OK. $1 = pgid file.
echo $$ > "$1"
sleep 1000 &
echo "all good"
exit 0
