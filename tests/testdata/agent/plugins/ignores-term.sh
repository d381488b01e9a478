#!/bin/bash
# Ignores SIGTERM (and so does its sleep, which inherits the ignored disposition). $1 = pgid file.
trap '' TERM
echo $$ > "$1"
sleep 1000
