#!/bin/bash
# Dies from a signal instead of exiting.
kill -SEGV $$
