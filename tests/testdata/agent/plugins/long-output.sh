#!/bin/bash
# 200 characters after leading and trailing blanks: trimmed, then cut to max_output_length.
printf '   \n'
printf 'x%.0s' $(seq 1 200)
printf '\n   \n'
exit 1
