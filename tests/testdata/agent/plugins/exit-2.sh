#!/bin/bash
# The plugin could not tell: any code other than 0 and 1.
echo "cannot reach chronyd"
exit 2
