"""The kernel's boot id: a random UUID the kernel draws at every boot, so a reboot is proven by it changing.

Read through the host root like every host file (`/proc/sys/kernel/random/boot_id` below `--host-root`); the path
is configurable only so that tests can stand a file in for it.
"""

from __future__ import annotations

import re

from agent.host import HostRoot

_BOOT_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z-]{0,63}")  # a UUID on Linux; a test's file may say "boot-a"


def read_boot_id(host: HostRoot, path: str) -> str:
    """The boot id in `path`; ValueError naming the path when it cannot be read or holds no boot id."""
    text = host.read_sensor(path).strip()
    if not _BOOT_ID.fullmatch(text):
        raise ValueError(f"{path}: not a boot id: {text[:40]!r}")
    return text
