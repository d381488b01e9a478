"""The taint list we send: only our own taints change, a human's same-key taint is never overwritten or adopted; a
change is written only while the node shows the conditions it was decided on."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import pytest

from nodemedic_common.kube_errors import ApiError
from remediator.actions.taintwriter import TaintWrite, new_taint_list, owned_after, write_node_taints
from remediator.model.plan import ConditionSeen, TaintChange
from remediator.model.records import Condition, Effect, Taint
from remediator.planning.owned_taints import OwnedTaint, render_owned
from remediator.policy.model import OWNED_TAINTS_ANNOTATION

NOW = dt.datetime(2026, 11, 22, 12, 0, tzinfo=dt.UTC)
OURS = Taint("nodemedic.io/kernel-deadlock", "true", Effect.NO_SCHEDULE)


def change(t: Taint) -> TaintChange:
    return TaintChange(node="n", taint=t, rules=("r",), cause="KernelDeadlock=True")


def test_adding_keeps_every_other_taint_untouched() -> None:
    current = [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]
    assert new_taint_list(current, [OURS], [], NOW) == [
        {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
        {"key": OURS.key, "value": "true", "effect": "NoSchedule"},
    ]


def test_a_human_taint_with_the_same_key_and_effect_is_not_overwritten_nor_adopted() -> None:
    current = [{"key": OURS.key, "value": "human", "effect": "NoSchedule"}]
    assert new_taint_list(current, [OURS], [], NOW) == current
    assert owned_after([], current, [change(OURS)], [], NOW) == []


def test_removal_drops_only_the_named_taint_and_ownership() -> None:
    current = [{"key": OURS.key, "value": "true", "effect": "NoSchedule"}, {"key": "other", "effect": "NoSchedule"}]
    owned = [OwnedTaint(OURS, ("r",), "c", NOW)]
    assert new_taint_list(current, [], [OURS], NOW) == [{"key": "other", "effect": "NoSchedule"}]
    assert owned_after(owned, current, [], [change(OURS)], NOW) == []


def test_a_noexecute_taint_gets_its_time_added() -> None:
    t = Taint("nodemedic.io/x", "", Effect.NO_EXECUTE)
    assert new_taint_list([], [t], [], NOW) == [{"key": "nodemedic.io/x", "effect": "NoExecute",
                                                 "timeAdded": "2026-11-22T12:00:00Z"}]


def test_ownership_is_recorded_with_rules_cause_and_time() -> None:
    (o,) = owned_after([], [], [change(OURS)], [], NOW)
    assert (o.taint, o.rules, o.cause, o.since) == (OURS, ("r",), "KernelDeadlock=True", NOW)


def test_an_owned_entry_whose_taint_a_human_removed_is_forgotten() -> None:
    owned = [OwnedTaint(OURS, ("r",), "c", NOW)]
    assert owned_after(owned, [], [], [], NOW) == []


def test_a_value_swap_replaces_our_taint_in_place_and_keeps_it_ours() -> None:
    renamed = Taint(OURS.key, "hung-tasks", OURS.effect)
    current = [{"key": "other", "effect": "NoSchedule"}, {"key": OURS.key, "value": "true", "effect": "NoSchedule"}]
    owned = [OwnedTaint(OURS, ("r",), "c", NOW)]
    assert new_taint_list(current, [renamed], [OURS], NOW) == [
        {"key": "other", "effect": "NoSchedule"}, {"key": OURS.key, "value": "hung-tasks", "effect": "NoSchedule"}]
    (o,) = owned_after(owned, current, [change(renamed)], [change(OURS)], NOW)
    assert o.taint == renamed


SPELL = dt.datetime(2026, 11, 22, 11, 59, 50, tzinfo=dt.UTC)  # the True spell the plan judged `for` on
TRUE = Condition("KernelDeadlock", "True", SPELL)
FLIPPED = Condition("KernelDeadlock", "False", SPELL + dt.timedelta(seconds=9))
BACK_AGAIN = Condition("KernelDeadlock", "True", SPELL + dt.timedelta(seconds=10))  # a new spell, `for` not yet held
DECIDED = TaintChange("n", OURS, ("kernel-deadlock",), "KernelDeadlock=True for 10s",
                      (ConditionSeen("KernelDeadlock", "True", SPELL),))


def api_node(c: Condition, rv: str) -> dict[str, Any]:
    return {"metadata": {"name": "n", "resourceVersion": rv}, "spec": {"taints": []},
            "status": {"conditions": [{"type": c.type, "status": c.status,
                                       "lastTransitionTime": c.last_transition.strftime("%Y-%m-%dT%H:%M:%SZ")
                                       if c.last_transition else None}]}}


class NodeApi:
    """GET and PATCH of one Node; the first `conflicts` PATCHes are answered 409 (someone wrote the node)."""

    def __init__(self, node: dict[str, Any], conflicts: int = 0) -> None:
        self.node, self.conflicts = node, conflicts
        self.patches: list[dict[str, Any]] = []

    async def get(self, path: str, **_: Any) -> Any:
        return self.node

    async def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> Any:
        assert method == "PATCH"
        self.patches.append(body)
        if self.conflicts:
            self.conflicts -= 1
            raise ApiError(409, method, path, '{"reason": "Conflict", "message": "the object has been modified"}')
        return self.node


def write(api: NodeApi, cached: Condition, *, owned: list[OwnedTaint] | None = None,
          removes: tuple[TaintChange, ...] = (), adds: tuple[TaintChange, ...] | None = None) -> TaintWrite:
    adds = adds if adds is not None else () if removes else (DECIDED,)
    taints = [{"key": OURS.key, "value": "true", "effect": "NoSchedule"}] if owned else []
    api.node["spec"]["taints"] = taints
    return asyncio.run(write_node_taints(api, "n", base={"resourceVersion": "1", "taints": taints},  # type: ignore[arg-type]
                                         conditions=(cached,), adds=adds, removes=removes, owned=owned or [], now=NOW))


def test_a_taint_is_written_while_the_node_shows_the_condition_it_was_decided_on() -> None:
    api = NodeApi(api_node(TRUE, "1"))
    written = write(api, TRUE)
    assert written.added == [DECIDED] and written.deferred == []
    assert api.patches[0]["spec"]["taints"] == [{"key": OURS.key, "value": "true", "effect": "NoSchedule"}]


def test_a_condition_that_flipped_in_the_cache_since_the_plan_defers_the_taint_and_writes_nothing() -> None:
    """The chaos test's flapping node: planned on a True spell of 10 s, written after the spell ended."""
    api = NodeApi(api_node(FLIPPED, "2"))
    written = write(api, FLIPPED)
    assert (written.added, written.deferred, api.patches) == ([], [DECIDED], [])


def test_a_condition_that_flipped_and_came_back_is_a_new_spell_and_defers_the_taint() -> None:
    written = write(NodeApi(api_node(BACK_AGAIN, "3")), BACK_AGAIN)
    assert written.deferred == [DECIDED]


def test_a_conflict_whose_re_read_shows_the_condition_flipped_defers_the_taint() -> None:
    """The cache still showed the spell; the API server's 409 says the node changed, and the re-read shows how."""
    api = NodeApi(api_node(FLIPPED, "2"), conflicts=1)
    written = write(api, TRUE)
    assert (written.added, written.deferred, len(api.patches)) == ([], [DECIDED], 1)


def test_a_conflict_that_left_the_condition_as_it_was_writes_the_taint() -> None:
    """Another writer's change (a heartbeat, a person's label) does not undo the plan's reason."""
    api = NodeApi(api_node(TRUE, "2"), conflicts=1)
    written = write(api, TRUE)
    assert written.added == [DECIDED] and len(api.patches) == 2
    assert api.patches[1]["metadata"]["resourceVersion"] == "2"


def test_a_recovery_whose_condition_came_back_defers_the_untaint() -> None:
    recovered = Condition("KernelDeadlock", "False", SPELL)
    removal = TaintChange("n", OURS, ("kernel-deadlock",), "KernelDeadlock=False for 10s",
                          (ConditionSeen("KernelDeadlock", "False", SPELL),))
    owned = [OwnedTaint(OURS, ("kernel-deadlock",), "KernelDeadlock=True for 10s", NOW)]
    api = NodeApi(api_node(BACK_AGAIN, "2"))
    written = write(api, BACK_AGAIN, owned=owned, removes=(removal,))
    assert (written.removed, written.deferred, api.patches) == ([], [removal], [])
    assert written.owned == owned
    api = NodeApi(api_node(recovered, "2"))
    written = write(api, recovered, owned=owned, removes=(removal,))
    assert written.removed == [removal] and written.owned == [] and api.patches[0]["spec"]["taints"] == []


def test_a_change_deferred_before_a_conflict_is_deferred_once() -> None:
    """One node, two rules: the add still holds and goes out after the 409's re-read; the removal, whose condition
    came back, is deferred on the first pass and must not be counted again on the second."""
    other = Taint("nodemedic.io/readonly-fs", "true", Effect.NO_SCHEDULE)
    removal = TaintChange("n", other, ("ro",), "ReadonlyFilesystem=False for 10s",
                          (ConditionSeen("ReadonlyFilesystem", "False", SPELL),))
    node = api_node(TRUE, "2")
    node["status"]["conditions"].append({"type": "ReadonlyFilesystem", "status": "True",
                                         "lastTransitionTime": "2026-11-22T12:00:00Z"})
    api = NodeApi(node, conflicts=1)
    owned = [OwnedTaint(other, ("ro",), "ReadonlyFilesystem=True for 30s", NOW)]
    written = write(api, TRUE, owned=owned, removes=(removal,), adds=(DECIDED,))
    assert written.deferred == [removal] and written.added == [DECIDED] and len(api.patches) == 2


def add_on_a_stale_cache(owned: list[OwnedTaint]) -> tuple[NodeApi, TaintWrite]:
    """DECIDED written from a cache that shows the node untainted at resourceVersion 1, where the node is at 2 and
    carries `owned`, taints and annotation (our own earlier write): the first PATCH is answered 409."""
    node = api_node(TRUE, "2")
    node["spec"]["taints"] = new_taint_list([], [o.taint for o in owned], [], NOW)
    node["metadata"]["annotations"] = {OWNED_TAINTS_ANNOTATION: render_owned(owned)}
    api = NodeApi(node, conflicts=1)
    return api, asyncio.run(write_node_taints(api, "n", base={"resourceVersion": "1", "taints": []},  # type: ignore[arg-type]
                                              conditions=(TRUE,), adds=(DECIDED,), removes=(), owned=[], now=NOW))


def test_a_taint_our_earlier_write_put_there_unseen_by_the_cache_stays_ours_and_is_not_written_again() -> None:
    """The cache is behind our last write: the plan adds the taint again, the cached resourceVersion earns a 409, and
    the re-read shows the taint with our annotation. Ours and in place: the annotation is read again with the node
    (the cache's record would make it a person's taint, dropped from the annotation and never removed on recovery)."""
    ours = [OwnedTaint(OURS, ("kernel-deadlock",), "KernelDeadlock=True for 10s", SPELL)]
    api, written = add_on_a_stale_cache(ours)
    assert (written.added, written.in_place, written.owned) == ([], [DECIDED], ours)
    assert len(api.patches) == 1, "only the stale PATCH the 409 answered"
    assert [m for m, _ in written.unwritten()] == [
        "taint change already in place: an earlier write landed before the node watch showed it"]


def test_a_value_of_ours_that_differs_is_not_in_place_and_is_written() -> None:
    api, written = add_on_a_stale_cache([OwnedTaint(Taint(OURS.key, "old", OURS.effect), ("kernel-deadlock",), "c",
                                                    SPELL)])
    assert written.added == [DECIDED] and written.in_place == [] and len(api.patches) == 2


class LostAnswerApi(NodeApi):
    """The PATCH is carried out (`landed`) or not, and its answer is lost either way."""

    def __init__(self, node: dict[str, Any], *, landed: bool, status: int = 0) -> None:
        super().__init__(node)
        self.landed, self.status = landed, status

    async def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> Any:
        self.patches.append(body)
        if self.landed:
            self.node["metadata"]["annotations"] = dict(body["metadata"]["annotations"])
            self.node["spec"]["taints"] = body["spec"]["taints"]
        raise ApiError(self.status, method, path, "ServerDisconnectedError: Server disconnected")


def test_a_taint_write_whose_answer_was_lost_and_that_landed_is_a_write_announced_as_any() -> None:
    api = LostAnswerApi(api_node(TRUE, "1"), landed=True)
    written = write(api, TRUE)
    assert written.added == [DECIDED] and [o.taint for o in written.owned] == [OURS]


@pytest.mark.parametrize("status", [0, 500, 503, 504])
def test_a_taint_write_whose_answer_was_lost_and_that_did_not_land_fails(status: int) -> None:
    api = LostAnswerApi(api_node(TRUE, "1"), landed=False, status=status)
    with pytest.raises(ApiError) as raised:
        write(api, TRUE)
    assert raised.value.status == status


def test_a_refused_taint_write_is_not_read_back_as_landed() -> None:
    """A 403 or 422 says the write was not carried out: no read, the failure stands."""
    api = LostAnswerApi(api_node(TRUE, "1"), landed=True, status=422)
    with pytest.raises(ApiError):
        write(api, TRUE)


def test_a_removal_our_earlier_write_made_unseen_by_the_cache_is_in_place_and_not_written_again() -> None:
    """The recovery's untaint landed; the next cycle, on a cache still showing the taint ours, plans it again: the
    409's re-read shows it gone and no longer ours, so nothing is written and nothing announced twice."""
    recovered = Condition("KernelDeadlock", "False", SPELL)
    removal = TaintChange("n", OURS, ("kernel-deadlock",), "KernelDeadlock=False for 10s",
                          (ConditionSeen("KernelDeadlock", "False", SPELL),))
    owned = [OwnedTaint(OURS, ("kernel-deadlock",), "KernelDeadlock=True for 10s", NOW)]
    api = NodeApi(api_node(recovered, "2"), conflicts=1)  # the node: untainted, no annotation
    written = asyncio.run(write_node_taints(
        api, "n", base={"resourceVersion": "1", "taints": new_taint_list([], [OURS], [], NOW)},  # type: ignore[arg-type]
        conditions=(recovered,), adds=(), removes=(removal,), owned=owned, now=NOW))
    assert (written.removed, written.in_place, len(api.patches)) == ([], [removal], 1)
