"""Ports for the processes the tests and tools start, which bind them later than they are chosen.

Asking the kernel for port 0 gives a port of its ephemeral range, the range it also takes every outgoing
connection's local port from: between the choice and the component's bind, any connection on the machine (a test's
API client, a kubelet, a pip download) may take it, and the component fails with "address already in use" (a run
of the suite saw kube-scheduler fail so). These ports are chosen below that range, where the kernel never hands one
out by itself, at random, and checked bindable on every address. Two of our processes choosing at once (the test
workers start their control planes together) could still pick the same free port, and one run saw kube-scheduler
lose such a race: so each port is also reserved machine-wide, by creating a file named after it in RESERVED with
O_EXCL, which only one process can do. Reservations older than RESERVATION_AGE are taken back (a port still in use
by then fails the bind check anyway).
"""

from __future__ import annotations

import os
import random
import socket
import time
from pathlib import Path

LOWEST = 20000  # above the well-known and registered ports the machine's own services use (the kubelet's 10250...)
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
RESERVED = Path("/tmp/nodemedic-ports")
RESERVATION_AGE = 3600.0  # seconds
_draw = random.SystemRandom()  # not the global generator, which a test framework may seed alike in every worker


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
    RESERVED.mkdir(parents=True, exist_ok=True)
    for _ in range(200):
        port = _draw.randrange(LOWEST, top)
        if not _reserve(port):
            continue
        with socket.socket() as s:
            try:
                s.bind(("0.0.0.0", port))
            except OSError:
                continue
        return port
    raise RuntimeError(f"no free port found in {LOWEST}-{top - 1} after 200 tries")


def _reserve(port: int) -> bool:
    """Whether this process now holds `port`'s reservation (a stale one is taken over)."""
    path = RESERVED / str(port)
    for _ in range(2):
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
            return True
        except FileExistsError:
            try:
                if time.time() - path.stat().st_mtime < RESERVATION_AGE:
                    return False
                path.unlink()
            except FileNotFoundError:
                pass
    return False
