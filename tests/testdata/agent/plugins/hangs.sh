#!/bin/bash
# Never finishes. $1 = file that receives the process group id.
echo $$ > "$1"
echo "started"
sleep 1000
