"""The `safety` section: the circuit breaker on tainted nodes, the global pause, the node opt-out label, and the
acknowledgements of settings that let nodemedic act on every node or pod (`acknowledge`, see RISKS)."""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from remediator.policy.default_evictor import EvictorArgs
from remediator.policy.limits import Limits
from remediator.policy.reader import Reader, Section
from remediator.policy.syntax import qualified_name_problem

EXCLUDE_LABEL = "nodemedic.io/exclude"
_SAFETY_KEYS = ("maxTaintedNodes", "maxTaintedNodesPercent", "minTaintedNodes", "paused", "excludeLabel",
                "acknowledge")

# Settings a policy may take only when it names the risk in `safety.acknowledge`: each removes the one rail that
# keeps a mistake (a rule that matches every node, a strategy gone wrong) from reaching the whole cluster.
# Documented, with the same reasons, in docs/remediator.md.
RISKS = {
    "unlimited-breaker": "with no maxTaintedNodes and no maxTaintedNodesPercent below 100, one bad rule or agent "
                         "rollout taints and drains every node at once",
    "unlimited-evictions": "with no maxNoOfPodsToEvictPerNode, PerNamespace nor Total, one cycle may evict every "
                           "matching pod in the cluster",
    "evict-daemonset-pods": "a DaemonSet pod is recreated on the same node at once (an eviction loop), and "
                            "evicting the node's networking, storage or logging agents breaks every other pod there",
    "evict-system-critical-pods": "system-node-critical and system-cluster-critical pods (DNS, CNI, kube-proxy, "
                                  "the metrics pipeline) keep the cluster itself working",
}


@dataclass(frozen=True)
class Safety:
    max_tainted_nodes: int | None = 3  # count
    max_tainted_nodes_percent: float | None = 10.0  # of nodes in scope; the smaller of count/percent wins
    min_tainted_nodes: int = 1  # floor, so a 3-node pool can still remediate one node
    paused: bool = False
    exclude_label: str = EXCLUDE_LABEL  # nodes labelled <exclude_label>=true are never tainted nor drained
    acknowledge: tuple[str, ...] = ()  # names from RISKS: the risky settings this file takes on purpose


def _risk_problem(name: str) -> str | None:
    return None if name in RISKS else f"unknown risk {name!r}; known: {', '.join(RISKS)}"


def read_safety(r: Reader, top: Section) -> Safety:
    m = r.section(top, "safety", _SAFETY_KEYS)
    d = Safety()
    safety = Safety(
        max_tainted_nodes=r.optional_integer(m, "maxTaintedNodes", d.max_tainted_nodes),
        max_tainted_nodes_percent=r.percent(m, "maxTaintedNodesPercent", d.max_tainted_nodes_percent),
        min_tainted_nodes=r.integer(m, "minTaintedNodes", d.min_tainted_nodes),
        paused=r.flag(m, "paused", d.paused),
        exclude_label=r.text(m, "excludeLabel", d.exclude_label, check=qualified_name_problem),
        acknowledge=r.strings(m, "acknowledge", _risk_problem) or d.acknowledge,
    )
    if safety.max_tainted_nodes is not None and safety.min_tainted_nodes > safety.max_tainted_nodes:
        # The floor wins over the count (docs: limit = max(min, ...)), so the count would silently mean nothing.
        key = "minTaintedNodes" if "minTaintedNodes" in m.values else "maxTaintedNodes"
        r.error(m.line_node(key), m.at(key),
                f"minTaintedNodes ({safety.min_tainted_nodes}) must not exceed maxTaintedNodes "
                f"({safety.max_tainted_nodes}); to stop tainting altogether use paused: true")
    return safety


def taken_risks(safety: Safety, limits: Limits, evictor: EvictorArgs) -> dict[str, tuple[str, ...]]:
    """Each risk of RISKS the settings take -> the fields (section, key...) that take it, first one blamed."""
    taken: dict[str, tuple[str, ...]] = {}
    percent = safety.max_tainted_nodes_percent
    if safety.max_tainted_nodes is None and (percent is None or percent >= 100):
        taken["unlimited-breaker"] = ("safety", "maxTaintedNodesPercent", "maxTaintedNodes")
    if (limits.max_pods_to_evict_per_node, limits.max_pods_to_evict_per_namespace,
            limits.max_pods_to_evict_total) == (None, None, None):
        taken["unlimited-evictions"] = ("limits", "maxNoOfPodsToEvictTotal", "maxNoOfPodsToEvictPerNode")
    if evictor.evict_daemonset_pods:
        taken["evict-daemonset-pods"] = ("evictor", "evictDaemonSetPods")
    if evictor.evict_system_critical_pods:
        taken["evict-system-critical-pods"] = ("evictor", "evictSystemCriticalPods")
    return taken


def check_acknowledged(r: Reader, top: Section, policy_risks: dict[str, tuple[str, ...]], safety: Safety) -> None:
    """Every risk taken must be acknowledged, and every acknowledgement must name a risk taken: a stale one would
    silently pre-approve the next edit that takes it."""
    for risk, (section, *keys) in policy_risks.items():
        if risk not in safety.acknowledge:
            node, path = _field(top, section, keys)
            r.error(node, path, f"{RISKS[risk]}; to do this on purpose add {risk} to safety.acknowledge")
    ack = top.values.get("safety")
    for name in safety.acknowledge:
        if name not in policy_risks:
            node, path = _field(top, "safety", ["acknowledge"]) if ack is not None else (top.node, "safety")
            r.error(node, path, f"acknowledges {name}, which this policy does not take; remove it")


def _field(top: Section, section: str, keys: list[str]) -> tuple[yaml.Node, str]:
    """The value node and path of the first of `keys` given under `section`, else the section's key."""
    node = top.values.get(section)
    if isinstance(node, yaml.MappingNode):
        given = {k.value: v for k, v in node.value if isinstance(k, yaml.ScalarNode)}
        for key in keys:
            if key in given:
                return given[key], f"{section}.{key}"
    return top.key_nodes.get(section, top.node), section
