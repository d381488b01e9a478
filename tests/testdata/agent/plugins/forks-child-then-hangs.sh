#!/bin/bash
# A background child plus a foreground wait that never ends. $1 = pgid file.
echo $$ > "$1"
sleep 1000 &
sleep 1000
