"""Per-cycle eviction limits and the per-owner cool-down: the first candidates win, the rest are deferred."""

from __future__ import annotations

import datetime as dt

import pytest

from remediator.model.plan import PlannedEviction, Protected
from remediator.model.records import OwnerRef, PodRecord
from remediator.planning.eviction_counts import LimitState
from remediator.policy.limits import Limits

NOW = dt.datetime(2024, 5, 1, 12, 0, 0, tzinfo=dt.UTC)
UNLIMITED = Limits(max_pods_to_evict_per_node=None, max_pods_to_evict_per_namespace=None,
                   max_pods_to_evict_total=None, owner_cooldown=dt.timedelta(0))


def cand(name: str, node: str = "n1", namespace: str = "default", owner: str | None = None) -> PlannedEviction:
    owners = (OwnerRef("ReplicaSet", owner, f"uid-{owner}", controller=True),) if owner else ()
    return PlannedEviction(PodRecord(namespace=namespace, name=name, uid=f"uid-{name}", node_name=node, owners=owners),
                           "RemovePodsViolatingNodeTaints", "test")


def admit_in_order(candidates: list[PlannedEviction], lim: Limits, *, owner_last_eviction: dict[str, dt.datetime],
                   ) -> tuple[list[PlannedEviction], list[Protected]]:
    """Ask and take one candidate after the other, as the cycle's gate does (Cycle.admit and Cycle.move)."""
    state = LimitState(lim, NOW, dict(owner_last_eviction))
    kept: list[PlannedEviction] = []
    deferred: list[Protected] = []
    for c in candidates:
        why = state.refusal(c.pod)
        if why is None:
            state.take(c.pod)
            kept.append(c)
        else:
            deferred.append(Protected(c.pod, why))
    return kept, deferred


def limits(**kw: object) -> Limits:
    return Limits(**{**UNLIMITED.__dict__, **kw})  # type: ignore[arg-type]


CANDIDATES = [cand("a", "n1", "x"), cand("b", "n1", "y"), cand("c", "n2", "x"), cand("d", "n2", "y"),
              cand("e", "n3", "x")]


@pytest.mark.parametrize(("lim", "kept", "why"), [
    (UNLIMITED, ["a", "b", "c", "d", "e"], ""),
    (limits(max_pods_to_evict_per_node=1), ["a", "c", "e"], "limit: maximum 1 evictions per node reached on n"),
    (limits(max_pods_to_evict_per_namespace=2), ["a", "b", "c", "d"], "limit: maximum 2 evictions per namespace"),
    (limits(max_pods_to_evict_total=3), ["a", "b", "c"], "limit: maximum 3 evictions per cycle"),
    (limits(max_pods_to_evict_total=0), [], "limit: maximum 0 evictions per cycle"),
    (limits(max_pods_to_evict_per_node=1, max_pods_to_evict_per_namespace=1), ["a", "d"], "limit: "),
], ids=["unlimited", "per-node", "per-namespace", "total", "total-zero", "node-and-namespace"])
def test_candidates_are_kept_in_order_while_every_limit_holds(lim: Limits, kept: list[str], why: str) -> None:
    evictions, deferred = admit_in_order(CANDIDATES, lim, owner_last_eviction={})
    assert [e.pod.name for e in evictions] == kept
    assert [d.pod.name for d in deferred] == [c.pod.name for c in CANDIDATES if c.pod.name not in kept]
    assert all(d.why.startswith(why) for d in deferred)


@pytest.mark.parametrize(("memory", "kept"), [
    ({}, ["a1", "b1", "x"]),
    ({"uid-a": NOW - dt.timedelta(seconds=2)}, ["b1", "x"]),
    ({"uid-a": NOW - dt.timedelta(seconds=5)}, ["a1", "b1", "x"]),
    ({"uid-a": NOW - dt.timedelta(seconds=60), "uid-b": NOW}, ["a1", "x"]),
], ids=["no-memory-one-per-owner", "recent-eviction-defers-owner", "cool-down-just-over", "memory-per-owner"])
def test_one_owner_loses_at_most_one_pod_per_cool_down(memory: dict[str, dt.datetime], kept: list[str]) -> None:
    candidates = [cand("a1", owner="a"), cand("a2", owner="a"), cand("b1", owner="b"), cand("x")]
    lim = limits(owner_cooldown=dt.timedelta(seconds=5))
    before = dict(memory)
    evictions, deferred = admit_in_order(candidates, lim, owner_last_eviction=memory)
    assert [e.pod.name for e in evictions] == kept
    assert all(d.why.startswith("owner cool-down: ReplicaSet/") for d in deferred)
    assert len(evictions) + len(deferred) == len(candidates)
    assert memory == before  # the controller records executed evictions; planning never writes them


def test_a_zero_cool_down_lets_every_pod_of_an_owner_go() -> None:
    candidates = [cand("a1", owner="a"), cand("a2", owner="a")]
    evictions, _ = admit_in_order(candidates, UNLIMITED, owner_last_eviction={"uid-a": NOW})
    assert [e.pod.name for e in evictions] == ["a1", "a2"]


def test_a_pod_deferred_by_a_limit_does_not_start_its_owners_cool_down() -> None:
    candidates = [cand("keep", "n1"), cand("a1", "n1", owner="a"), cand("a2", "n2", owner="a")]
    lim = limits(max_pods_to_evict_per_node=1, owner_cooldown=dt.timedelta(seconds=5))
    evictions, deferred = admit_in_order(candidates, lim, owner_last_eviction={})
    assert [e.pod.name for e in evictions] == ["keep", "a2"]
    assert [(d.pod.name, d.why.split(":")[0]) for d in deferred] == [("a1", "limit")]


def test_the_cool_down_message_says_how_long_ago_and_how_long_it_lasts() -> None:
    _, deferred = admit_in_order([cand("a1", owner="a")], limits(owner_cooldown=dt.timedelta(seconds=5)),
                                 owner_last_eviction={"uid-a": NOW - dt.timedelta(seconds=2)})
    assert deferred[0].why == "owner cool-down: ReplicaSet/a had a pod evicted 2s ago (cool-down 5s)"


@pytest.mark.parametrize(("lim", "first", "second", "refused"), [
    (dict(max_pods_to_evict_total=1), cand("a", "n1"), cand("b", "n2"), "maximum 1 evictions per cycle"),
    (dict(max_pods_to_evict_per_namespace=1), cand("a", "n1"), cand("b", "n2"), "per namespace"),
    (dict(owner_cooldown=dt.timedelta(minutes=5)), cand("a", "n1", owner="web"), cand("b", "n2", owner="web"),
     "owner cool-down"),
    (dict(max_pods_to_evict_total=2), cand("a", "n1"), cand("b", "n2"), None),
], ids=["total-of-one", "namespace-of-one", "same-owner-cool-down", "room-for-two"])
def test_two_evictions_that_go_together_are_counted_together_and_nothing_is_taken(
        lim: dict[str, object], first: PlannedEviction, second: PlannedEviction, refused: str | None) -> None:
    state = LimitState(limits(**lim), NOW, {})
    assert state.refusal(first.pod) is None and state.refusal(second.pod) is None  # each alone may go
    why = state.refusal_together(first.pod, second.pod)
    assert (why is None) if refused is None else (why is not None and refused in why)
    assert state.taken == 0 and not state.per_node and not state.owner_last_eviction  # a trial only
