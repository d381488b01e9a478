"""The taint HighNodeUtilization puts on the node it empties, and which nodes carry it now.

The taint is owned like a rule's (the owned-taints annotation), with "strategy:HighNodeUtilization" as its rule,
so the planner can give the nodes back when the strategy leaves the policy.
"""

from __future__ import annotations

from remediator.model import Snapshot, Taint
from remediator.planning.taints import parse_owned
from remediator.policy.model import OWNED_TAINTS_ANNOTATION, STRATEGY_PREFIX

CONSOLIDATION_TAINT = Taint(key="nodemedic.io/consolidating", value="true")
CONSOLIDATION_OWNER = STRATEGY_PREFIX + "HighNodeUtilization"  # the "rule" in the owned-taints annotation


def consolidating(snapshot: Snapshot) -> dict[str, float]:
    """Nodes carrying nodemedic's consolidation taint -> seconds since it was added."""
    out: dict[str, float] = {}
    for name, node in snapshot.nodes.items():
        present = {t.identity() for t in node.taints}
        for o in parse_owned(node.annotations.get(OWNED_TAINTS_ANNOTATION))[0]:
            if o.taint.identity() == CONSOLIDATION_TAINT.identity() and o.taint.identity() in present \
                    and CONSOLIDATION_OWNER in o.rules:
                out[name] = (snapshot.now - o.since).total_seconds()
    return out
