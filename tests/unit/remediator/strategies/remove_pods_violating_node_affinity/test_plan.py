"""RemovePodsViolatingNodeAffinity: descheduler's cases (node_affinity_test.go) through the real gate, and the
preferred case that needs a better node the pod fits (DS-AFF-1)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from remediator.model.records import NodeSelectorTerm, PodRecord, PreferredNodeTerm, SelectorRequirement
from remediator.policy.default_evictor import EvictorArgs
from remediator.strategies.remove_pods_violating_node_affinity.args import (
    PREFERRED,
    REQUIRED,
    RemovePodsViolatingNodeAffinityArgs,
)
from remediator.strategies.remove_pods_violating_node_affinity.plan import NAME
from tests.unit.remediator.strategies.cluster import cycle, evicted, node, pod, snapshot

SSD = NodeSelectorTerm(match_expressions=(SelectorRequirement("disk", "In", ("ssd",)),))
ZONE_A = NodeSelectorTerm(match_expressions=(SelectorRequirement("zone", "In", ("a",)),))
REQ = RemovePodsViolatingNodeAffinityArgs(node_affinity_type=(REQUIRED,))
PREF = RemovePodsViolatingNodeAffinityArgs(node_affinity_type=(PREFERRED,))


def wants_ssd(name: str = "p", **kw: object) -> PodRecord:
    return pod(name, "hdd", required_node_affinity=(SSD,), **kw)


def prefers_ssd(name: str = "p", **kw: object) -> PodRecord:
    return pod(name, "hdd", preferred_node_affinity=(PreferredNodeTerm(10, SSD),), **kw)


@dataclass(frozen=True)
class Case:
    id: str
    pods: list[PodRecord]
    args: RemovePodsViolatingNodeAffinityArgs
    evicted: list[str]
    target: dict[str, object] = field(default_factory=dict)  # the "ssd" node's settings
    evictor: EvictorArgs = EvictorArgs()


CASES = [
    Case("required-correctly-placed", [pod("p", "ssd", required_node_affinity=(SSD,))], REQ, []),
    Case("preferred-correctly-placed", [pod("p", "ssd", preferred_node_affinity=(PreferredNodeTerm(10, SSD),))],
         PREF, []),
    Case("required-violated-other-node-fits", [wants_ssd()], REQ, ["p"]),
    Case("preferred-better-node-fits", [prefers_ssd()], PREF, ["p"]),
    Case("required-only-type-ignores-preferred", [prefers_ssd()], REQ, []),
    Case("required-no-node-fits", [wants_ssd(cpu=8000)], REQ, []),
    Case("preferred-no-node-fits", [prefers_ssd(cpu=8000)], PREF, []),
    Case("required-target-unschedulable", [wants_ssd()], REQ, [], target={"unschedulable": True}),
    Case("preferred-target-unschedulable", [prefers_ssd()], PREF, [], target={"unschedulable": True}),
    # descheduler asks for a fit only through PodFitsAnyNode, whatever nodeFit says: so does nodemedic
    Case("required-no-fit-even-without-node-fit", [wants_ssd()], REQ, [], target={"unschedulable": True},
         evictor=EvictorArgs(node_fit=False)),
    Case("both-types", [wants_ssd("r"), prefers_ssd("q")],
         RemovePodsViolatingNodeAffinityArgs(node_affinity_type=(REQUIRED, PREFERRED)), ["r", "q"]),
    Case("node-selector-alone-is-not-required-affinity", [pod("p", "hdd", node_selector={"disk": "ssd"})], REQ, []),
    Case("bare-pod-protected", [wants_ssd(owner="")], REQ, []),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_descheduler_cases(case: Case) -> None:
    ssd = node("ssd", labels={"disk": "ssd"}, **case.target)  # type: ignore[arg-type]
    s = snapshot([node("hdd", labels={"disk": "hdd"}), ssd], case.pods)
    assert evicted(cycle(s, NAME, case.args, evictor=case.evictor)) == case.evicted


def test_preferred_needs_the_better_node_to_fit_not_just_any_node() -> None:
    """DS-AFF-1: descheduler evicts when some node scores higher and the pod fits *some* node; here the node that
    scores higher must be one the pod fits."""
    s = snapshot([node("hdd", labels={"disk": "hdd"}), node("ssd", labels={"disk": "ssd"}, unschedulable=True),
                  node("other", labels={"disk": "hdd"})], [prefers_ssd()])
    assert evicted(cycle(s, NAME, PREF)) == []


def test_preferred_weights_add_up_and_only_a_higher_sum_moves_a_pod() -> None:
    terms = (PreferredNodeTerm(10, SSD), PreferredNodeTerm(5, ZONE_A))
    here = node("here", labels={"disk": "ssd", "zone": "b"})
    s1 = snapshot([here, node("b", labels={"disk": "hdd", "zone": "a"})],
                  [pod("p", "here", preferred_node_affinity=terms)])
    assert evicted(cycle(s1, NAME, PREF)) == []  # 10 here, 5 there
    s2 = snapshot([here, node("c", labels={"disk": "ssd", "zone": "a"})],
                  [pod("p", "here", preferred_node_affinity=terms)])
    [e] = cycle(s2, NAME, PREF).evictions
    assert e.reason == "preferred node affinity weight 10 on here; c fits with weight 15"


def test_the_required_reason_names_the_node_that_matches() -> None:
    s = snapshot([node("hdd", labels={"disk": "hdd"}), node("ssd", labels={"disk": "ssd"})], [wants_ssd()])
    [e] = cycle(s, NAME, REQ).evictions
    assert e.reason == "node hdd no longer matches its required node affinity; ssd does"
