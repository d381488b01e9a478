"""The planning cycle runs with the cyclic collector paused, and leaves it as it found it; the controller's cycles
freeze what they keep, and the heap's periodic collection looks at that too."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from remediator.state.heap import HeapFreezer, collection_paused


@pytest.fixture
def restore_gc() -> Iterator[None]:
    was = gc.isenabled()
    yield
    gc.unfreeze()  # the rest of the test session collects as before
    (gc.enable if was else gc.disable)()


class _Cyclic:
    """An object only the cyclic collector frees once dropped: it refers to itself."""

    def __init__(self) -> None:
        self.me = self


@pytest.mark.parametrize("enabled", [True, False], ids=["enabled-before", "disabled-before"])
def test_collection_is_off_inside_and_as_before_after(enabled: bool, restore_gc: None) -> None:
    (gc.enable if enabled else gc.disable)()
    with collection_paused():
        assert not gc.isenabled()
    assert gc.isenabled() is enabled


def test_an_error_inside_still_restores_collection(restore_gc: None) -> None:
    gc.enable()
    with pytest.raises(RuntimeError), collection_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_a_plain_pause_freezes_nothing(restore_gc: None) -> None:
    gc.enable()
    before = gc.get_freeze_count()
    with collection_paused():
        kept = [[i] for i in range(1000)]
    assert gc.get_freeze_count() == before
    assert len(kept) == 1000


def test_a_controller_cycle_freezes_what_it_leaves_alive_once_the_heap_is_collected(restore_gc: None) -> None:
    heap = HeapFreezer()  # collection off until the caches are synced
    frozen_before = gc.get_freeze_count()
    with heap.cycle():
        early = [[i] for i in range(1000)]
    assert not gc.isenabled()
    assert gc.get_freeze_count() == frozen_before  # collection still off: the block froze nothing
    assert len(early) == 1000

    assert heap.maybe_freeze()
    assert gc.isenabled()
    before = gc.get_freeze_count()
    with heap.cycle():
        assert not gc.isenabled()
        kept = [[i] for i in range(1000)]
    assert gc.isenabled()
    assert gc.get_freeze_count() >= before + 1000  # the 1,000 lists kept (and their holder) are frozen
    assert len(kept) == 1000


def test_cyclic_garbage_a_cycle_froze_is_freed_by_the_next_collection_of_the_whole_heap(restore_gc: None) -> None:
    heap = HeapFreezer()
    heap.maybe_freeze()
    with heap.cycle():
        garbage = _Cyclic()
        gone = weakref.ref(garbage)
        del garbage  # unreachable, but in a cycle: reference counting alone does not free it
    gc.collect()
    assert gone() is not None  # frozen with the rest: the collector skips it
    heap.last = float("-inf")  # FREEZE_INTERVAL has passed
    assert heap.maybe_freeze()
    assert gone() is None
