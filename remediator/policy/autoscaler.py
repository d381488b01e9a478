"""The `autoscaler` section: what the cluster's node autoscaler does, so nodemedic works with it instead of racing it
(docs/autoscalers.md)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias

from remediator.policy.reader import Reader, Section

_AUTOSCALER_KEYS = ("addsNodes", "consolidates")
AUTO: Final = "auto"
# true, false, or AUTO: true when the remediator finds a node autoscaler in the cluster (state/autoscaler_detection.py)
AddsNodes: TypeAlias = bool | Literal["auto"]


@dataclass(frozen=True)
class AutoscalerSettings:
    """`adds_nodes`: an autoscaler (Karpenter, cluster-autoscaler) adds a node for pods that fit nowhere, so node fit
    also accepts, for a pod drained off a tainted node, a new node like the one it leaves. AUTO decides per node from
    the autoscalers the remediator found (planning/new_node.py). A DeschedulerPolicy is read with false: descheduler's
    node fit counts only the nodes there are (descheduler.py).
    `consolidates`: the autoscaler empties underutilized nodes itself (Karpenter's WhenEmptyOrUnderutilized,
    cluster-autoscaler's scale-down): then a strategy that does the same is refused: one consolidator.
    """

    adds_nodes: AddsNodes = AUTO
    consolidates: bool = False


def read_autoscaler(r: Reader, top: Section, consolidators: Collection[str]) -> AutoscalerSettings:
    """`consolidators`: the configured strategies that empty nodes for the autoscaler (policy/strategies.py)."""
    m = r.section(top, "autoscaler", _AUTOSCALER_KEYS)
    d = AutoscalerSettings()
    settings = AutoscalerSettings(adds_nodes=_adds_nodes(r, m, d.adds_nodes),
                                  consolidates=r.flag(m, "consolidates", d.consolidates))
    for name in consolidators if settings.consolidates else ():
        # Two consolidators race: each drains nodes the other counts on as destinations (docs/autoscalers.md).
        r.error(m.line_node("consolidates"), m.at("consolidates"),
                f"the node autoscaler consolidates, so {name} must not: remove one of them "
                f"(with Karpenter, consolidationPolicy WhenEmpty leaves packing to {name})")
    return settings


def _adds_nodes(r: Reader, m: Section, default: AddsNodes) -> AddsNodes:
    node = m.values.get("addsNodes")
    if node is None:
        return default
    got = r.value(node, m.at("addsNodes"))
    if isinstance(got, bool):
        return got
    if got == AUTO:
        return AUTO
    r.wrong(node, m.at("addsNodes"), f"true, false or {AUTO}", got)
    return default
