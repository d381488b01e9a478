"""The planning cycle runs with the cyclic collector paused, and leaves it as it found it."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from remediator.state.heap import collection_paused


@pytest.fixture
def restore_gc() -> Iterator[None]:
    was = gc.isenabled()
    yield
    (gc.enable if was else gc.disable)()


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
