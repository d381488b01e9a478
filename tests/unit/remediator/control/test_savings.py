"""Which nominations became rooms (control/savings.py), against the fake ConfigMaps and real records and metrics:
seated on a node older than the nomination, not on a new one; closed when the pod leaves; the counters; the ledger
written only on a change, read back by the next leader, kept when unreadable, and merged after a conflict."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import logging

from prometheus_client import CollectorRegistry

from remediator.alerts.savings_metrics import create_savings_metrics
from remediator.control.savings import CLAIM_TTL, RETRY_AFTER, Savings
from remediator.model.plan import Nomination
from remediator.model.records import NodeRecord, PodRecord
from remediator.model.savings import KEY, ledger_of
from remediator.policy.model import Policy
from remediator.policy.savings import Price, SavingsSettings
from remediator.state.snapshot import NodeAutoscaler, Snapshot
from tests.unit.remediator.fake_configmaps import ConfigMaps

T0 = dt.datetime(2026, 11, 29, 10, 0, tzinfo=dt.UTC)
PATH = "/api/v1/namespaces/ops/configmaps/ledger"
SETTINGS = SavingsSettings(currency="USD", prices=(Price((("node.kubernetes.io/instance-type", "m5.large"),), 0.1),))
OLD = NodeRecord(name="old", labels={"karpenter.sh/nodepool": "general",
                                    "node.kubernetes.io/instance-type": "m5.large"}, created=T0 - dt.timedelta(days=1))
NEW = NodeRecord(name="new", labels={"karpenter.sh/nodepool": "general"}, created=T0 + dt.timedelta(minutes=1))
NODES = {"old": OLD, "new": NEW}


def pending(name: str = "p", uid: str = "u1") -> PodRecord:
    return PodRecord(namespace="shop", name=name, uid=uid)


def bound(pod: PodRecord, node: str, **kw: object) -> PodRecord:
    return PodRecord(namespace=pod.namespace, name=pod.name, uid=pod.uid, node_name=node, phase="Running", **kw)  # type: ignore[arg-type]


def make(api: ConfigMaps) -> tuple[Savings, CollectorRegistry]:
    registry = CollectorRegistry()
    return Savings(kube=api, namespace="ops", name="ledger", metrics=create_savings_metrics(registry),  # type: ignore[arg-type]
                   log=logging.getLogger("test")), registry


POLICY = Policy(savings=SETTINGS)  # autoscaler.addsNodes: auto
KARPENTER = Snapshot(now=T0, nodes={}, pods_by_node={}, pods_by_owner={},
                     autoscalers=frozenset({NodeAutoscaler.KARPENTER}))


def observe(s: Savings, pods: list[PodRecord], at: dt.datetime, planned: Snapshot = KARPENTER,
            nodes: dict[str, NodeRecord] = NODES) -> None:
    asyncio.run(s.observe(nodes, {p.key: p for p in pods}, POLICY, planned, at))


def nominate(s: Savings, pod: PodRecord, node: str = "old") -> None:
    s.claim(Nomination(pod, node, ("shop/mover",), "NodemedicMakingRoom", "room"), T0)


def test_a_nominated_pod_bound_to_an_older_node_opens_a_room_priced_by_its_labels_until_it_leaves() -> None:
    api = ConfigMaps()
    s, registry = make(api)
    p = pending()
    nominate(s, p)
    observe(s, [p], T0)
    assert s.ledger is not None and not s.ledger.open and api.calls == [("GET", PATH)], "nothing to write yet"
    observe(s, [bound(p, "old")], T0 + dt.timedelta(seconds=10))
    (room,) = ledger_of(api.objects[PATH], "cm").open
    assert (room.pod, room.node, room.pool, room.instance_type, room.per_hour) == ("shop/p", "old", "general",
                                                                                 "m5.large", 0.1)
    writes = len(api.calls)
    observe(s, [bound(p, "old")], T0 + dt.timedelta(hours=2, seconds=10))
    assert len(api.calls) == writes, "an open room needs no write"
    assert registry.get_sample_value("nodemedic_savings_node_hours_total", {"pool": "general"}) == 2.0
    assert registry.get_sample_value("nodemedic_savings_cost_total", {"pool": "general", "currency": "USD"}) == 0.2
    assert registry.get_sample_value("nodemedic_savings_rooms", {"pool": "general"}) == 1.0
    observe(s, [], T0 + dt.timedelta(hours=3, seconds=10))
    stored = ledger_of(api.objects[PATH], "cm")
    assert not stored.open and stored.days[0].node_hours == 3.0 and round(stored.days[0].cost, 6) == 0.3
    assert registry.get_sample_value("nodemedic_savings_node_hours_total", {"pool": "general"}) == 3.0
    assert registry.get_sample_value("nodemedic_savings_rooms", {"pool": "general"}) is None


def test_no_room_for_a_pod_bound_to_a_node_made_after_its_nomination_or_never_bound() -> None:
    api = ConfigMaps()
    s, _ = make(api)
    a, b, c = pending("a", "ua"), pending("b", "ub"), pending("c", "uc")
    for p in (a, b, c):
        nominate(s, p)
    other_c = bound(pending("c", "another-pod-of-that-name"), "old")
    observe(s, [bound(a, "new"), b, other_c], T0 + dt.timedelta(minutes=2))
    assert set(s.claims) == {"ub"}
    observe(s, [b], T0 + CLAIM_TTL + dt.timedelta(seconds=1))
    assert not s.claims and s.ledger is not None and not s.ledger.open and PATH not in api.objects


def test_no_room_where_no_autoscaler_would_have_added_a_node() -> None:
    """Without one there was no scale-out to avoid: the pod would have waited."""
    for planned, nodes in ((dataclasses.replace(KARPENTER, autoscalers=frozenset()), NODES),
                           (KARPENTER, {"old": NodeRecord(name="old", created=OLD.created)})):  # not a NodePool's
        s, _ = make(ConfigMaps())
        p = pending()
        nominate(s, p)
        observe(s, [bound(p, "old")], T0 + dt.timedelta(seconds=1), planned, nodes)
        assert not s.claims and s.ledger is not None and not s.ledger.open


def test_a_room_closes_when_its_pod_moves_terminates_or_finishes() -> None:
    for gone in (lambda p: bound(p, "new"), lambda p: bound(p, "old", terminating=True),
                 lambda p: PodRecord(namespace="shop", name="p", uid="u1", node_name="old", phase="Succeeded")):
        s, _ = make(ConfigMaps())
        p = pending()
        nominate(s, p)
        observe(s, [bound(p, "old")], T0 + dt.timedelta(seconds=1))
        observe(s, [gone(p)], T0 + dt.timedelta(hours=1, seconds=1))
        assert s.ledger is not None and not s.ledger.open and s.ledger.days[0].node_hours == 1.0


def test_the_next_leader_reads_the_open_rooms_and_goes_on_counting_them() -> None:
    api = ConfigMaps()
    s, _ = make(api)
    p = pending()
    nominate(s, p)
    observe(s, [bound(p, "old")], T0)
    s.stepped_down()
    assert s.ledger is None
    successor, registry = make(api)
    observe(successor, [bound(p, "old")], T0 + dt.timedelta(hours=1))
    observe(successor, [bound(p, "old")], T0 + dt.timedelta(hours=2))
    assert registry.get_sample_value("nodemedic_savings_node_hours_total", {"pool": "general"}) == 1.0, \
        "the counter counts this leader's hour; the first hour was the first leader's"
    observe(successor, [], T0 + dt.timedelta(hours=4))
    assert ledger_of(api.objects[PATH], "cm").days[0].node_hours == 4.0


def test_an_unreadable_ledger_is_kept_and_nothing_recorded_until_it_is_repaired() -> None:
    api = ConfigMaps()
    api.put_object(PATH, {"data": {KEY: "not json"}})
    s, _ = make(api)
    p = pending()
    nominate(s, p)
    observe(s, [bound(p, "old")], T0)
    assert s.ledger is None and s.unreadable.startswith("configmap ops/ledger: data.ledger.json: not JSON")
    assert api.objects[PATH]["data"][KEY] == "not json" and [m for m, _ in api.calls] == ["GET"]
    observe(s, [bound(p, "old")], T0 + RETRY_AFTER - dt.timedelta(seconds=1))
    assert len(api.calls) == 1, "no read again before RETRY_AFTER: not one request per cycle"
    api.fail = [503]
    observe(s, [bound(p, "old")], T0 + RETRY_AFTER)
    assert s.ledger is None and len(api.calls) == 2


def test_a_failed_write_is_tried_again_and_a_conflict_merges_our_rooms_into_the_stored_ledger() -> None:
    api = ConfigMaps()
    s, _ = make(api)
    a, b = pending("a", "ua"), pending("b", "ub")
    nominate(s, a)
    observe(s, [bound(a, "old")], T0)
    api.fail = [500]
    nominate(s, b)
    t = T0 + dt.timedelta(seconds=5)
    observe(s, [bound(a, "old"), bound(b, "old")], t)
    assert s.dirty
    calls = len(api.calls)
    observe(s, [bound(a, "old"), bound(b, "old")], t + RETRY_AFTER - dt.timedelta(seconds=1))
    assert s.dirty and len(api.calls) == calls, "no write again before RETRY_AFTER"
    observe(s, [bound(a, "old"), bound(b, "old")], t + RETRY_AFTER)
    assert not s.dirty and len(ledger_of(api.objects[PATH], "cm").open) == 2
    other, _ = make(api)  # a late write of someone else's moves the version under us
    asyncio.run(other.store.load())
    asyncio.run(other.store.save(ledger_of(api.objects[PATH], "cm")))
    t += RETRY_AFTER + dt.timedelta(seconds=5)
    observe(s, [bound(a, "old")], t)  # b closes: 409, then merged
    assert s.ledger is not None and [r.pod for r in s.ledger.open] == ["shop/a", "shop/b"], \
        "the stored ledger wins a conflict, our open rooms added to it"
    observe(s, [bound(a, "old")], t + RETRY_AFTER)  # b closes again, written over the version read
    stored = ledger_of(api.objects[PATH], "cm")
    assert [r.pod for r in stored.open] == ["shop/a"] and stored.days[0].seated == 2
