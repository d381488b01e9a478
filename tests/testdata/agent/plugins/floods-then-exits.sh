#!/bin/bash
# 20 MB on stdout and 20 MB on stderr, then a verdict: only finishes if both pipes are drained as it writes.
head -c 20000000 /dev/zero | tr '\0' 'a'
head -c 20000000 /dev/zero | tr '\0' 'b' >&2
exit 1
