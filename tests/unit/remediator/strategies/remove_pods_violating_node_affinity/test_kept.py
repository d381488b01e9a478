"""remove_pods_violating_node_affinity/kept.py: which pods of a node need a look, kept while the node's pod list and
labels stay the same."""

from __future__ import annotations

import dataclasses

from remediator.model.records import NodeSelectorTerm, PreferredNodeTerm, SelectorRequirement
from remediator.strategies.remove_pods_violating_node_affinity.kept import (
    NO_PODS,
    KeptNodeAffinity,
    needing_a_look,
    preferred_weight,
)
from tests.unit.remediator.strategies.cluster import node, pod

SSD = NodeSelectorTerm(match_expressions=(SelectorRequirement("disk", "In", ("ssd",)),))
ZONE_A = NodeSelectorTerm(match_expressions=(SelectorRequirement("zone", "In", ("a",)),))
PREFERS = (PreferredNodeTerm(10, SSD), PreferredNodeTerm(5, ZONE_A))


def test_only_pods_off_their_required_terms_or_short_of_their_full_preference_need_a_look() -> None:
    ssd_a = node("n1", labels={"disk": "ssd", "zone": "a"})
    ssd_b = node("n1", labels={"disk": "ssd", "zone": "b"})
    pods = [pod("needs", "n1", required_node_affinity=(SSD,)), pod("prefers", "n1", preferred_node_affinity=PREFERS),
            pod("done", "n1", required_node_affinity=(SSD,), phase="Succeeded"), pod("plain", "n1")]
    assert needing_a_look(ssd_a, pods) is NO_PODS
    look = needing_a_look(ssd_b, pods)
    assert look.violating == () and [(p.name, own) for p, own in look.preferring] == [("prefers", 10)]
    hdd = node("n1", labels={"disk": "hdd", "zone": "a"})
    look = needing_a_look(hdd, pods)
    assert [p.name for p in look.violating] == ["needs"]
    assert [(p.name, w) for p, w in look.preferring] == [("prefers", 5)]
    assert preferred_weight(pods[1], hdd) == 5


def test_a_node_s_look_is_kept_for_its_pod_list_and_labels() -> None:
    kept = KeptNodeAffinity()
    hdd = node("n1", labels={"disk": "hdd"})
    pods = [pod("needs", "n1", required_node_affinity=(SSD,))]
    first = kept.of(hdd, pods)
    assert [p.name for p in first.violating] == ["needs"]
    assert kept.of(dataclasses.replace(hdd, labels={"disk": "hdd"}), pods) is first  # equal labels
    assert kept.of(dataclasses.replace(hdd, labels={"disk": "ssd"}), pods) is NO_PODS  # relabelled: it matches now
    assert kept.of(hdd, list(pods)) is not first  # another list: the node's pods changed
    again = kept.of(hdd, pods)
    assert kept.of(hdd, pods) is again
    n2 = node("n2")
    kept.keep_only([(n2, kept.of(n2, []))])  # a run that looks at n2 only: n1 is forgotten
    assert kept.of(hdd, pods) is not again and kept.of(hdd, pods).violating == first.violating
