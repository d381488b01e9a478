"""One Event per Xid, whichever of its two sources tells first: the kernel log (`gpu-monitor.json`) and NVML's
event set (the `nvml` check) both see every Xid the driver raises.

Both word it the same way, `Xid (PCI:<domain>:<bus>:<device>): <code>`, so the GPU and the code are the key. An
Event from one check pairs with one unpaired Event of the same key from the other check within `window`, and is
dropped; the same Xid repeated by one source (an application faulting twice) stays two Events.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import deque
from dataclasses import dataclass, field

from agent.model import EventReport

WINDOW = dt.timedelta(minutes=2)  # NVML is looked at every 30 s; the kernel line arrives within a second
_XID = re.compile(r"Xid \((?:PCI:)?([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})(?:\.[0-7])?\): (\d+)")


def xid_key(message: str) -> tuple[str, int] | None:
    """(GPU as domain:bus:device, Xid code), or None for an Event that is no Xid."""
    found = _XID.search(message)
    if found is None:
        return None
    domain, bus, device, code = found.groups()
    return f"{domain[-4:]}:{bus}:{device}".lower(), int(code)


@dataclass
class XidPairs:
    window: dt.timedelta = WINDOW
    _unpaired: dict[tuple[str, int], deque[tuple[str, dt.datetime]]] = field(default_factory=dict)

    def first_telling(self, event: EventReport, *, source: str, at: dt.datetime) -> bool:
        """False when `event` is an Xid another source already reported (then it is not sent)."""
        key = xid_key(event.message)
        if key is None:
            return True
        for seen in self._unpaired.values():
            while seen and at - seen[0][1] > self.window:
                seen.popleft()
        self._unpaired = {k: v for k, v in self._unpaired.items() if v}
        seen = self._unpaired.setdefault(key, deque())
        for i, (other, _) in enumerate(seen):
            if other != source:
                del seen[i]
                return False
        seen.append((source, at))
        return True
