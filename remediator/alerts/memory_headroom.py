"""The remediator's memory against its container's limit: a gauge of the limit (for the chart's alert beside the
process's own RSS), and one warning in the log when the most it has held comes near the limit, naming the cluster's
size and what to raise, before the kernel kills it mid-cycle.

Its caches grow with the cluster (docs/deploy.md, "Sizing the remediator": about 1 MiB per 1,000 pods measured
against a real API server); a limit fitted to a small cluster is outgrown without a word otherwise.
"""

from __future__ import annotations

import logging
import resource
from collections.abc import Callable
from pathlib import Path

from prometheus_client import CollectorRegistry, Gauge

CGROUP = Path("/sys/fs/cgroup")
NEAR = 0.8  # of the limit: warned once the peak passes it
# cgroup v1 has no "max": an unlimited group reads PAGE_COUNTER_MAX in bytes, about 2^63 rounded to pages.
UNLIMITED_V1 = 1 << 60
MIB = 1 << 20


def container_limit(root: Path = CGROUP) -> int | None:
    """Bytes this process's cgroup may use (v2 `memory.max`, v1 `memory/memory.limit_in_bytes`), None: unlimited or
    unknown. In a container both paths are the container's own group."""
    for path in (root / "memory.max", root / "memory" / "memory.limit_in_bytes"):
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if not text.isdigit():  # "max", or anything a kernel might write that is not a number of bytes
            return None
        value = int(text)
        return None if value >= UNLIMITED_V1 else value
    return None


def peak_rss() -> int:
    """The most this process has held in memory since it started, in bytes (Linux gives kilobytes)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class MemoryHeadroom:
    def __init__(self, registry: CollectorRegistry, log: logging.Logger, *, limit: int | None,
                 peak: Callable[[], int] = peak_rss) -> None:
        self.log, self.limit, self.peak = log, limit, peak
        self.warned = False
        Gauge("nodemedic_memory_limit_bytes", "The remediator container's memory limit (cgroup); 0: none",
              registry=registry).set(limit or 0)

    def after_cycle(self, size: Callable[[], tuple[int, int]]) -> None:
        """`size`: the cluster's (nodes, pods), asked for only when it is said."""
        if self.limit is None or self.warned:
            return
        peak = self.peak()
        if peak < NEAR * self.limit:
            return
        self.warned = True
        nodes, pods = size()
        self.log.warning("memory near the container's limit: raise remediator.resources.limits.memory (docs/deploy.md, "
                         "Sizing the remediator)", extra={
                             "peak_mib": round(peak / MIB), "limit_mib": round(self.limit / MIB), "nodes": nodes,
                             "pods": pods})
