#!/bin/sh
# NPD-protocol plugin: exit 1 when the package manager left a reboot-required marker (Debian/Ubuntu), 0 when not,
# 2 when the marker's directory can't be seen at all (so a wrong path reads as Unknown, never as healthy).
# $1 = the marker file; in a pod point it into the host mount, e.g. /host/var/run/reboot-required.
marker="${1:-/var/run/reboot-required}"
if [ ! -d "$(dirname "$marker")" ]; then
    echo "cannot see $(dirname "$marker")"
    exit 2
fi
if [ -e "$marker" ]; then
    packages=$(tr '\n' ' ' < "$marker.pkgs" 2>/dev/null)
    echo "a reboot is required${packages:+ by: $packages}"
    exit 1
fi
echo "no reboot required"
exit 0
