"""zram swap filling up: a `ZramHighUsage` event when a zram device holds more than `max_percent` of its size.

`/sys/block/zram<N>/mm_stat` starts with orig_data_size (bytes of uncompressed data stored) and `disksize` is the
device's size. A full zram swap device means the node is swapping into RAM it no longer has: memory exhaustion
follows. An event on each crossing of the threshold (not on every poll while above it); nodes without a zram device
set up report nothing, and look again only every `IDLE_INTERVAL` (agent/sensors/idle.py) until one is.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from agent.bounds import PERCENT, bounded
from agent.host import HostRoot
from agent.model import CheckTiming, EventReport, Observation
from agent.sensors.idle import idle_timing

EVENT = "ZramHighUsage"


@dataclass(frozen=True)
class Config:
    timing: CheckTiming = field(default_factory=lambda: CheckTiming(interval=dt.timedelta(minutes=1)))
    max_percent: float = bounded(50.0, PERCENT)


def zram_usage(host: HostRoot) -> dict[str, tuple[int, int]]:
    """zram device -> (bytes stored, disksize); devices without a size yet (not set up) are left out."""
    usage = {}
    block = host.path("/sys/block")
    for device in sorted(block.glob("zram*")) if block.is_dir() else []:
        try:
            size = int((device / "disksize").read_text().split()[0])
            stored = int((device / "mm_stat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        if size > 0:
            usage[device.name] = (stored, size)
    return usage


class ZramCheck:
    name = "zram"
    condition_types: tuple[str, ...] = ()

    def __init__(self, config: Config, host: HostRoot) -> None:
        self.timing = config.timing
        self._config = config
        self._host = host
        self._above: set[str] = set()

    async def observe(self, now: dt.datetime) -> Observation:
        events = []
        above = set()
        usage = zram_usage(self._host)
        self.timing = self._config.timing if usage else idle_timing(self._config.timing)
        for device, (stored, size) in usage.items():
            percent = 100 * stored / size
            if percent > self._config.max_percent:
                above.add(device)
                if device not in self._above:
                    events.append(EventReport(EVENT, f"{device} holds {stored >> 20} MiB of {size >> 20} MiB "
                                                     f"({percent:.0f}%, threshold {self._config.max_percent:g}%)"))
        self._above = above
        return Observation(self.name, now, events=tuple(events))
