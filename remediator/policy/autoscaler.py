"""The `autoscaler` section: what the cluster's node autoscaler does, so nodemedic works with it instead of racing it
(docs/autoscalers.md)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias

from remediator.policy.reader import Reader, Section

_AUTOSCALER_KEYS = ("addsNodes", "consolidates", "activeWithin")
AUTO: Final = "auto"
# true, false, or AUTO: true when the remediator finds a node autoscaler in the cluster (state/autoscaler_detection.py)
AddsNodes: TypeAlias = bool | Literal["auto"]
# `activeWithin`: how fresh an autoscaler's own stamp must be for `auto` to count on it (state/autoscaler_activity.py).
ACTIVE_WITHIN = dt.timedelta(minutes=5)
# Shorter and a live autoscaler flickers out of the plan: cluster-autoscaler stamps its status once per loop
# (--scan-interval, 10s by default, set to 1m on some clusters) and a Karpenter leader that lost its Lease to another
# replica has a new one renew it within its lease duration (15s).
ACTIVE_WITHIN_FLOOR = (dt.timedelta(minutes=1), "a live autoscaler stamps its status every 10s-1m and would be "
                                                "counted on and off")
# Longer and a dead autoscaler is counted on: every pod drained meanwhile waits Pending for a node that never comes,
# for up to this plus the 5m between looks. 30m is twice cluster-autoscaler's own --max-node-provision-time (15m),
# after which even it gives up on a node it asked for.
ACTIVE_WITHIN_CEILING = (dt.timedelta(minutes=30), "an autoscaler silent longer is gone, and the pods drained for "
                                                   "its nodes would wait Pending")


@dataclass(frozen=True)
class AutoscalerSettings:
    """`adds_nodes`: an autoscaler (Karpenter, cluster-autoscaler) adds a node for pods that fit nowhere, so node fit
    also accepts, for a pod drained off a tainted node, a new node like the one it leaves. AUTO decides per node from
    the autoscalers the remediator found (planning/new_node.py). A DeschedulerPolicy is read with false: descheduler's
    node fit counts only the nodes there are (descheduler.py).
    `consolidates`: the autoscaler empties underutilized nodes itself (Karpenter's WhenEmptyOrUnderutilized,
    cluster-autoscaler's scale-down): then a strategy that does the same is refused: one consolidator.
    `active_within`: with AUTO, an autoscaler counts only while its own stamp (cluster-autoscaler's status
    ConfigMap, Karpenter's leader Lease) is at most this old: its objects outlive it.
    """

    adds_nodes: AddsNodes = AUTO
    consolidates: bool = False
    active_within: dt.timedelta = ACTIVE_WITHIN


def read_autoscaler(r: Reader, top: Section, consolidators: Collection[str]) -> AutoscalerSettings:
    """`consolidators`: the configured strategies that empty nodes for the autoscaler (policy/strategies.py)."""
    m = r.section(top, "autoscaler", _AUTOSCALER_KEYS)
    d = AutoscalerSettings()
    settings = AutoscalerSettings(adds_nodes=_adds_nodes(r, m, d.adds_nodes),
                                  consolidates=r.flag(m, "consolidates", d.consolidates),
                                  active_within=r.duration(m, "activeWithin", d.active_within,
                                                           floor=ACTIVE_WITHIN_FLOOR, ceiling=ACTIVE_WITHIN_CEILING))
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
