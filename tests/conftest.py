"""Hooks for the whole suite."""

from __future__ import annotations

import pytest

from tests import ordering


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook renames grouped tests (`name@group`)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    ordering.longest_first(items, ordering.load())
