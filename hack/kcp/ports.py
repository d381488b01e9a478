"""Ports for the processes the tests and tools start, which bind them later than they are chosen.

Asking the kernel for port 0 gives a port of its ephemeral range, the range it also takes every outgoing
connection's local port from: between the choice and the component's bind, any connection on the machine (a test's
API client, a kubelet, a pip download) may take it, and the component fails with "address already in use" (a run
of the suite saw kube-scheduler fail so). These ports are chosen below that range, where the kernel never hands one
out by itself, at random, and checked bindable on every address; a process never hands out the same port twice.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

LOWEST = 20000  # above the well-known and registered ports the machine's own services use (the kubelet's 10250...)
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_handed_out: set[int] = set()


def ephemeral_start() -> int:
    """The first port of the kernel's ephemeral range (32768 unless the machine changed it)."""
    try:
        return int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A port nothing listens on now, outside the kernel's ephemeral range."""
    top = ephemeral_start()
    if top - LOWEST < 1000:
        raise RuntimeError(f"the ephemeral port range starts at {top}: too few ports below it for the tests "
                           f"(from {LOWEST}); see {EPHEMERAL_RANGE}")
    for _ in range(200):
        port = random.randrange(LOWEST, top)
        if port in _handed_out:
            continue
        with socket.socket() as s:
            try:
                s.bind(("0.0.0.0", port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    raise RuntimeError(f"no free port found in {LOWEST}-{top - 1} after 200 tries")
