"""The registry names every strategy folder once, and each folder's STRATEGY under a unique name."""

from __future__ import annotations

from pathlib import Path

import pytest

import remediator.strategies as registry

FOLDERS = sorted(p.parent.name for p in Path(registry.__file__).parent.glob("*/__init__.py"))


def test_every_strategy_folder_is_registered_once() -> None:
    assert sorted(registry.REGISTERED) == FOLDERS
    assert len(registry.STRATEGIES) == len(registry.REGISTERED)  # no two folders share a strategy name


def test_each_strategy_has_a_kind_the_planner_runs() -> None:
    assert {s.kind for s in registry.STRATEGIES.values()} <= set(registry.KINDS)


def test_a_folder_without_a_strategy_is_refused_by_name() -> None:
    with pytest.raises(TypeError, match=r"remediator\.strategies\.strategy\.STRATEGY"):
        registry._load("strategy")
