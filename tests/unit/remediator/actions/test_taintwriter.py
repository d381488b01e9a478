"""The taint list we send: only our own taints change, a human's same-key taint is never overwritten or adopted."""

from __future__ import annotations

import datetime as dt

from remediator.actions.taintwriter import new_taint_list, owned_after
from remediator.model.plan import TaintChange
from remediator.model.records import Effect, Taint
from remediator.planning.owned_taints import OwnedTaint

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
