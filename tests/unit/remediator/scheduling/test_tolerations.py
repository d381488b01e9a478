"""Toleration matching: every rule of Kubernetes' ToleratesTaint, and the any/none helpers built on it."""

from __future__ import annotations

import pytest

from remediator.model.records import Effect, Taint, Toleration
from remediator.scheduling.tolerations import tolerated, tolerates, untolerated

NS, PNS, NE = Effect.NO_SCHEDULE, Effect.PREFER_NO_SCHEDULE, Effect.NO_EXECUTE


def tol(key: str = "", operator: str = "Equal", value: str = "", effect: str = "") -> Toleration:
    return Toleration(key=key, operator=operator, value=value, effect=effect)


@pytest.mark.parametrize(("toleration", "taint", "expected"), [
    (tol("k", "Equal", "v", "NoSchedule"), Taint("k", "v", NS), True),
    (tol("k", "Equal", "v", "NoSchedule"), Taint("k", "w", NS), False),
    (tol("k", "Equal", "", "NoSchedule"), Taint("k", "", NS), True),
    (tol("k", "", "v", "NoSchedule"), Taint("k", "v", NS), True),
    (tol("k", "", "v", "NoSchedule"), Taint("k", "w", NS), False),
    (tol("k", "Exists", "", "NoSchedule"), Taint("k", "anything", NS), True),
    (tol("k", "Exists", "", "NoSchedule"), Taint("other", "v", NS), False),
    (tol("", "Exists"), Taint("any.key/x", "v", NE), True),
    (tol("", "Exists", effect="NoSchedule"), Taint("any.key/x", "v", NS), True),
    (tol("", "Exists", effect="NoSchedule"), Taint("any.key/x", "v", NE), False),
    (tol("", "Equal", "v"), Taint("k", "v", NS), False),
    (tol("k", "Equal", "v", ""), Taint("k", "v", NE), True),
    (tol("k", "Equal", "v", ""), Taint("k", "v", PNS), True),
    (tol("k", "Equal", "v", "NoExecute"), Taint("k", "v", NS), False),
    (tol("k", "Equal", "v", "PreferNoSchedule"), Taint("k", "v", PNS), True),
    (tol("k", "Equal", "v"), Taint("K", "v", NS), False),
    (tol("sla", "Gt", "900"), Taint("sla", "950", NS), True),
    (tol("sla", "Gt", "950"), Taint("sla", "950", NS), False),
    (tol("sla", "Gt", "900"), Taint("sla", "850", NS), False),
    (tol("fail", "Lt", "5"), Taint("fail", "2", NS), True),
    (tol("fail", "Lt", "5"), Taint("fail", "5", NS), False),
    (tol("fail", "Lt", "5"), Taint("fail", "15", NS), False),
    (tol("fail", "Lt", "0"), Taint("fail", "-3", NS), True),
    (tol("fail", "Lt", "5"), Taint("fail", "high", NS), False),
    (tol("fail", "Lt", "five"), Taint("fail", "2", NS), False),
    (tol("fail", "Lt", "5"), Taint("fail", "", NS), False),
    (tol("fail", "Lt", "5"), Taint("fail", "02", NS), False),
    (tol("fail", "Lt", "5"), Taint("fail", "+2", NS), False),
    (tol("fail", "Lt", "5.5"), Taint("fail", "2", NS), False),
    (tol("fail", "Gt", "1"), Taint("fail", str(2**63), NS), False),
    (tol("fail", "Lt", "5"), Taint("other", "2", NS), False),
    (tol("", "Lt", "5"), Taint("fail", "2", NS), False),
    (tol("k", "Matches", "v"), Taint("k", "v", NS), False),
], ids=["equal-same-value", "equal-other-value", "equal-both-empty", "empty-operator-is-equal",
        "empty-operator-other-value", "exists-any-value", "exists-other-key", "empty-key-exists-matches-all",
        "empty-key-exists-same-effect", "empty-key-exists-other-effect", "empty-key-equal-matches-nothing",
        "empty-effect-matches-noexecute", "empty-effect-matches-prefernoschedule", "effect-mismatch",
        "prefernoschedule-effect", "keys-are-case-sensitive", "gt-taint-greater", "gt-taint-equal",
        "gt-taint-smaller", "lt-taint-smaller", "lt-taint-equal", "lt-taint-greater", "lt-negative-taint",
        "lt-non-integer-taint", "lt-non-integer-toleration", "lt-empty-taint", "lt-leading-zero",
        "lt-plus-sign", "lt-decimal-toleration", "gt-taint-beyond-int64", "lt-other-key", "lt-empty-key",
        "unknown-operator"])
def test_a_toleration_tolerates_a_taint_by_kubernetes_rules(toleration: Toleration, taint: Taint,
                                                            expected: bool) -> None:
    assert tolerates(toleration, taint) is expected


@pytest.mark.parametrize(("tolerations", "expected"), [
    ((), False),
    ((tol("other", "Exists"),), False),
    ((tol("other", "Exists"), tol("k", "Equal", "v")), True),
    ((tol("", "Exists"),), True),
], ids=["no-tolerations", "only-unrelated", "one-of-several", "wildcard"])
def test_a_taint_is_tolerated_when_any_toleration_tolerates_it(tolerations: tuple[Toleration, ...],
                                                               expected: bool) -> None:
    assert tolerated(tolerations, Taint("k", "v", NS)) is expected


TAINTS = (Taint("a", "", NS), Taint("b", "", PNS), Taint("c", "", NE), Taint("d", "", NS))


@pytest.mark.parametrize(("tolerations", "effects", "expected_keys"), [
    ((), {NS, NE}, ["a", "c", "d"]),
    ((), {"NoSchedule"}, ["a", "d"]),
    ((), {PNS}, ["b"]),
    ((), set(), []),
    ((tol("a", "Exists"),), {NS, NE}, ["c", "d"]),
    ((tol("", "Exists", effect="NoSchedule"),), {NS, NE}, ["c"]),
    ((tol("", "Exists"),), {NS, PNS, NE}, []),
], ids=["none-tolerated-blocking-effects", "effect-given-as-string", "prefer-only", "no-effects",
        "one-tolerated", "wildcard-for-one-effect", "wildcard-for-all"])
def test_untolerated_lists_the_taints_of_the_given_effects_nothing_tolerates(
        tolerations: tuple[Toleration, ...], effects: set[Effect | str], expected_keys: list[str]) -> None:
    assert [t.key for t in untolerated(tolerations, TAINTS, effects)] == expected_keys


def test_untolerated_reads_a_one_shot_iterator_of_tolerations_for_every_taint() -> None:
    tolerations = iter([tol("", "Exists", effect="NoSchedule")])
    assert untolerated(tolerations, TAINTS, {NS}) == []
