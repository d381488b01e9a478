"""Keep the garbage collector off the watch caches.

A remediator for a big cluster holds hundreds of thousands of long-lived records (one per pod and node).
CPython's cyclic GC walks every tracked object on each full collection, and a planning cycle allocates enough
to trigger them: on 150,000 pods that is about 0.3 s of every cycle spent re-scanning records that never form
cycles. `gc.freeze()` moves everything alive into a permanent generation the collector skips (reference
counting still frees those objects as usual). Called once the caches are synced, after every planning cycle of the
controller (the values it keeps for the next cycle join the records), and every FREEZE_INTERVAL, when the whole heap
is collected once and frozen again, so cyclic garbage frozen with the rest lives at most that long.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator
from contextlib import contextmanager

FREEZE_INTERVAL = 600.0  # seconds


class HeapFreezer:
    """Construct it before the caches' first LIST: collection stays off while a whole cluster is decoded (with
    millions of fresh objects every full collection re-scans all of them: it doubled the time to load 15,000
    pods) and comes back, with the survivors frozen, at the first `maybe_freeze`."""

    def __init__(self) -> None:
        self.last = float("-inf")
        gc.disable()

    def maybe_freeze(self) -> bool:
        """Collect the whole heap, what `cycle` froze included, then freeze the survivors, at most once per
        FREEZE_INTERVAL; True when it did."""
        now = time.monotonic()
        if now - self.last < FREEZE_INTERVAL:
            return False
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        gc.enable()
        self.last = now
        return True

    @contextmanager
    def cycle(self) -> Iterator[None]:
        """A planning cycle (the snapshot and the plan) with collection paused, and what it leaves alive frozen on
        the way out: the values it keeps for the next cycle (state/derived.py), hundreds of thousands of objects at
        20,000 nodes, which the first collection after the cycle scanned whole (0.15 s) and the full collections
        between cycles again (1.1 s every few cycles; `make bench-steady`). Before the first `maybe_freeze`
        (collection still off), nothing is frozen."""
        with collection_paused(freeze=True):
            yield


@contextmanager
def collection_paused(*, freeze: bool = False) -> Iterator[None]:
    """No cyclic collection inside the block (a planning cycle): its temporaries are freed by reference counting
    as they go, and at 150,000 pods the collections its allocations trigger cost ~0.1 s a cycle, re-scanning the
    cycle's own live indexes. Whatever cyclic garbage it leaves is collected once the block ends, unless `freeze`
    (HeapFreezer.cycle): then, where collection was on, everything alive is frozen before it comes back. One cycle
    at a time (the planner runs on the event loop's thread): the state found on entry is restored on exit."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if freeze:
                gc.freeze()
            gc.enable()
