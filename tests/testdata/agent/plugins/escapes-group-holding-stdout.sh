#!/bin/bash
# Starts a child in a session of its own (out of reach of a group kill) that keeps stdout open, then reports OK.
# $1 = file that receives the escaped child's pid; it is written from inside the new session, so once it exists
# the child has escaped, and the test can clean it up.
setsid bash -c 'echo $$ > "$1"; exec sleep 30' escaped "$1" &
while [ ! -s "$1" ]; do sleep 0.01; done
echo "all good"
exit 0
