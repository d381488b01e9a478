"""The pace of a check that found nothing to look at on this host (no NVIDIA GPU, no zram device).

Most nodes have no GPU: a check that lists the PCI bus every 30 s to find none again is a cost on every one of them.
Such a check looks again at `IDLE_INTERVAL` instead, and goes back to its own interval as soon as it finds something,
so hardware that appears later (a hot-plugged device, a device set up after the agent started) is seen within it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

from agent.model import CheckTiming

IDLE_INTERVAL = dt.timedelta(minutes=5)


def idle_timing(timing: CheckTiming) -> CheckTiming:
    """`timing` slowed to IDLE_INTERVAL (never sped up: a configured interval above it stays)."""
    return dataclasses.replace(timing, interval=max(timing.interval, IDLE_INTERVAL))
