"""Hooks for the whole suite."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import ordering
from tests.real_journal import RealJournal


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook renames grouped tests (`name@group`)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    ordering.longest_first(items, ordering.load())


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[RealJournal]:
    """A real journal in `tmp_path/host`, written by this machine's systemd-journald (tests/real_journal.py)."""
    real = RealJournal(tmp_path / "host", tmp_path).start()
    try:
        yield real
    finally:
        real.stop()
