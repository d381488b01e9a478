"""The rails every repair step passes, as kured and Karpenter's node repair bound theirs: the node's opt-outs, the
unhealthy share of its pool, how many nodes are in repair at once, how many steps an hour, and, for the steps that
end every pod on the node (reboot, replace), the window, blocking pods and a finished drain."""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from collections.abc import Iterable, Mapping

from nodemedic_common.repair_contract import OPT_OUT_LABEL, RepairAction
from remediator.model.records import TERMINAL_PHASES, NodeRecord, PodRecord
from remediator.planning.owned_taints import OwnedTaint, strategy_owned
from remediator.planning.pod_protection import MIRROR_ANNOTATION
from remediator.planning.rails import safety_hold
from remediator.policy.model import Policy
from remediator.policy.repair import ZONE_LABEL, RepairSettings
from remediator.repair.state import LadderState
from remediator.scheduling.selectors import matches_labels
from remediator.state.snapshot import Snapshot

ACTING = (RepairAction.RESTART, RepairAction.REBOOT, RepairAction.REPLACE)
RATE_WINDOW = dt.timedelta(hours=1)


def group_of(node: NodeRecord, settings: RepairSettings) -> str:
    """The node's pool (the first pool label it carries), else its zone, else the whole cluster."""
    for label in settings.pool_labels:
        if label in node.labels:
            return f"{label}={node.labels[label]}"
    zone = node.labels.get(ZONE_LABEL)
    return f"{ZONE_LABEL}={zone}" if zone else "cluster"


def opted_out(node: NodeRecord, policy: Policy) -> str | None:
    if node.labels.get(OPT_OUT_LABEL) == "true":
        return f"the node opted out of repair ({OPT_OUT_LABEL}=true)"
    hold = safety_hold(node, policy.safety)
    return None if hold is None else hold.why


def unhealthy(node: NodeRecord, owned: Iterable[OwnedTaint]) -> bool:
    """Not Ready, or carrying a taint of one of the rules (a problem nodemedic found)."""
    return not node.ready or any(not strategy_owned(o) for o in owned)


def halted_groups(snapshot: Snapshot, settings: RepairSettings,
                  owned_after: Mapping[str, list[OwnedTaint]]) -> dict[str, str]:
    """group -> why: more of its nodes unhealthy than the share allows (at least one always may be)."""
    total: Counter[str] = Counter()
    sick: Counter[str] = Counter()
    for name, node in snapshot.nodes.items():
        group = group_of(node, settings)
        total[group] += 1
        if unhealthy(node, owned_after.get(name, ())):
            sick[group] += 1
    out = {}
    for group, n in total.items():
        allowed = max(1, math.floor(settings.max_unhealthy_percent * n / 100))
        if sick[group] > allowed:
            out[group] = (f"{sick[group]} of {n} nodes in {group} are unhealthy, more than "
                          f"{settings.max_unhealthy_percent:g}% allows ({allowed}): the cause is likely not these "
                          f"nodes, so none of them is repaired")
    return out


def started_within(states: Iterable[LadderState], now: dt.datetime) -> int:
    """Steps that acted on a node (restart, reboot, replace) asked for within the last hour, from the ladders'
    annotations: the rate survives a restart of the remediator."""
    since = now - RATE_WINDOW
    count = 0
    for s in states:
        count += s.action in ACTING and s.requested > since
        count += sum(1 for t in s.history if t.action in ACTING and t.requested > since)
    return count


def stays_through(pod: PodRecord) -> bool:
    """A pod a drain leaves where it is and a reboot takes from no one: DaemonSet and mirror pods, and pods that have
    finished. A pod being deleted is waited for: its graceful shutdown is what the drain gave it."""
    return (pod.phase in TERMINAL_PHASES or MIRROR_ANNOTATION in pod.annotations
            or any(o.kind == "DaemonSet" for o in pod.owners))


def left_to_drain(snapshot: Snapshot, node: str) -> list[PodRecord]:
    return [p for p in snapshot.pods(node) if not stays_through(p)]


def blocking(snapshot: Snapshot, node: str, settings: RepairSettings) -> list[PodRecord]:
    selector = settings.blocking_pod_selector
    if selector is None:
        return []
    return [p for p in snapshot.pods(node) if p.live and matches_labels(selector, p.labels)]
