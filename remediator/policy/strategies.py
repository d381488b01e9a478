"""The `strategies` section: each entry names a registered strategy, whose own `read_args` reads its `args`.

The registry (strategies/__init__.py) sits above the policy (each strategy's args.py reads with the policy's reader),
so the policy never imports it: whoever loads a policy hands the loader the registry's `StrategyCatalog`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from remediator.policy.model import StrategyConfig
from remediator.policy.reader import Reader, Section

_STRATEGY_KEYS = ("name", "args")


class Registered(Protocol):
    """What the policy reads of a registered strategy (strategies/strategy.py: Strategy)."""

    @property
    def kind(self) -> str: ...

    @property
    def read_args(self) -> Callable[[Reader, Section], object]: ...

    @property
    def empties_nodes(self) -> bool: ...

    @property
    def packing(self) -> str: ...


@dataclass(frozen=True)
class StrategyCatalog:
    strategies: Mapping[str, Registered]  # name -> the registered strategy
    default: tuple[StrategyConfig, ...]  # what a policy without a `strategies` key runs

    def kinds(self) -> dict[str, str]:
        """Each registered strategy's name -> its kind ("deschedule" or "balance"), descheduler's extension points."""
        return {name: s.kind for name, s in self.strategies.items()}


def read_strategies(r: Reader, top: Section, catalog: StrategyCatalog) -> tuple[StrategyConfig, ...]:
    items = r.sequence(top, "strategies")
    if items is None:
        return catalog.default  # an explicit empty list means "taint only, never evict"
    out: list[StrategyConfig] = []
    seen: dict[str, str] = {}
    known = catalog.strategies
    for node, path in items:
        m = r.mapping(node, path, _STRATEGY_KEYS)
        name = r.text(m, "name", required=True)
        if not name:
            continue
        if name not in known:
            r.error(m.values["name"], m.at("name"), f"unknown strategy {name!r}; known: {', '.join(sorted(known))}")
            continue
        if name in seen:
            r.error(m.values["name"], m.at("name"), f"duplicate strategy {name!r} (also {seen[name]})")
            continue
        seen[name] = path
        out.append(StrategyConfig(name, known[name].read_args(r, m)))
    return tuple(out)


def consolidators(strategies: tuple[StrategyConfig, ...], catalog: StrategyCatalog) -> list[str]:
    """The configured strategies that empty nodes for the autoscaler to remove (strategies/strategy.py)."""
    return [s.name for s in strategies if catalog.strategies[s.name].empties_nodes]


def packers(strategies: tuple[StrategyConfig, ...], catalog: StrategyCatalog) -> list[str]:
    """The configured strategies that need a packing scheduler profile (strategies/strategy.py: `packing`)."""
    return [s.name for s in strategies if catalog.strategies[s.name].packing]
