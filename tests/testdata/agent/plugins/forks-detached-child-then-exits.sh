#!/bin/bash
# Leaves a background child with its output redirected away (no pipe to notice it by), then reports a problem.
echo $$ > "$1"
sleep 1000 >/dev/null 2>&1 </dev/null &
echo "disk is failing"
exit 1
