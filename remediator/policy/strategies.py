"""The `strategies` section: each entry names a registered strategy, whose own `read_args` reads its `args`."""

from __future__ import annotations

from remediator.policy.model import StrategyConfig
from remediator.policy.reader import Reader, Section
from remediator.strategies import STRATEGIES
from remediator.strategies.remove_pods_violating_node_taints.args import RemovePodsViolatingNodeTaintsArgs

_STRATEGY_KEYS = ("name", "args")
DEFAULT_STRATEGIES = (StrategyConfig("RemovePodsViolatingNodeTaints", RemovePodsViolatingNodeTaintsArgs()),)


def read_strategies(r: Reader, top: Section) -> tuple[StrategyConfig, ...]:
    items = r.sequence(top, "strategies")
    if items is None:
        return DEFAULT_STRATEGIES  # an explicit empty list means "taint only, never evict"
    out: list[StrategyConfig] = []
    seen: dict[str, str] = {}
    for node, path in items:
        m = r.mapping(node, path, _STRATEGY_KEYS)
        name = r.text(m, "name", required=True)
        if not name:
            continue
        if name not in STRATEGIES:
            r.error(m.values["name"], m.at("name"),
                    f"unknown strategy {name!r}; known: {', '.join(sorted(STRATEGIES))}")
            continue
        if name in seen:
            r.error(m.values["name"], m.at("name"), f"duplicate strategy {name!r} (also {seen[name]})")
            continue
        seen[name] = path
        out.append(StrategyConfig(name, STRATEGIES[name].read_args(r, m)))
    return tuple(out)


def consolidators(strategies: tuple[StrategyConfig, ...]) -> list[str]:
    """The configured strategies that empty nodes for the autoscaler to remove (strategies/strategy.py)."""
    return [s.name for s in strategies if STRATEGIES[s.name].empties_nodes]


def packers(strategies: tuple[StrategyConfig, ...]) -> list[str]:
    """The configured strategies that need a packing scheduler profile (strategies/strategy.py: `packing`)."""
    return [s.name for s in strategies if STRATEGIES[s.name].packing]


def strategy_kinds() -> dict[str, str]:
    """Each registered strategy's name -> its kind ("deschedule" or "balance"), descheduler's extension points."""
    return {name: s.kind for name, s in STRATEGIES.items()}
