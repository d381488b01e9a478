"""The `safety` section: the circuit breaker on tainted nodes, the global pause and the node opt-out label."""

from __future__ import annotations

from dataclasses import dataclass

from remediator.policy.reader import Reader, Section
from remediator.policy.syntax import qualified_name_problem

EXCLUDE_LABEL = "nodemedic.io/exclude"
_SAFETY_KEYS = ("maxTaintedNodes", "maxTaintedNodesPercent", "minTaintedNodes", "paused", "excludeLabel")


@dataclass(frozen=True)
class Safety:
    max_tainted_nodes: int | None = 3  # count
    max_tainted_nodes_percent: float | None = 10.0  # of nodes in scope; the smaller of count/percent wins
    min_tainted_nodes: int = 1  # floor, so a 3-node pool can still remediate one node
    paused: bool = False
    exclude_label: str = EXCLUDE_LABEL  # nodes labelled <exclude_label>=true are never tainted nor drained


def read_safety(r: Reader, top: Section) -> Safety:
    m = r.section(top, "safety", _SAFETY_KEYS)
    d = Safety()
    safety = Safety(
        max_tainted_nodes=r.optional_integer(m, "maxTaintedNodes", d.max_tainted_nodes),
        max_tainted_nodes_percent=r.percent(m, "maxTaintedNodesPercent", d.max_tainted_nodes_percent),
        min_tainted_nodes=r.integer(m, "minTaintedNodes", d.min_tainted_nodes),
        paused=r.flag(m, "paused", d.paused),
        exclude_label=r.text(m, "excludeLabel", d.exclude_label, check=qualified_name_problem),
    )
    if safety.max_tainted_nodes is not None and safety.min_tainted_nodes > safety.max_tainted_nodes:
        # The floor wins over the count (docs: limit = max(min, ...)), so the count would silently mean nothing.
        key = "minTaintedNodes" if "minTaintedNodes" in m.values else "maxTaintedNodes"
        r.error(m.line_node(key), m.at(key),
                f"minTaintedNodes ({safety.min_tainted_nodes}) must not exceed maxTaintedNodes "
                f"({safety.max_tainted_nodes}); to stop tainting altogether use paused: true")
    return safety
