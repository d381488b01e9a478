"""Failures in a row before a probe's condition turns True, and one good probe to clear it."""

from __future__ import annotations

from agent.model import Status
from agent.verdicts.debounce import FailureDebounce


def debounce() -> FailureDebounce:
    return FailureDebounce("Kubelet", "KubeletUnhealthy", threshold=3)


def test_failures_below_the_threshold_repeat_the_unknown_start_then_turn_true() -> None:
    d = debounce()
    first = d.report("connection refused", ok="", target="http://127.0.0.1:10248/healthz")
    assert (first.status, first.reason) == (Status.UNKNOWN, "KubeletHealthUnknown")
    assert first.message == "http://127.0.0.1:10248/healthz: connection refused (1 failure(s) in a row, threshold 3)"
    assert d.confirming
    d.report("connection refused", ok="", target="t")
    third = d.report("connection refused", ok="", target="t")
    assert (third.status, third.reason) == (Status.TRUE, "KubeletUnhealthy")
    assert third.message == "t: connection refused (3 or more failures in a row)"
    assert not d.confirming
    fourth = d.report("connection refused", ok="", target="t")
    assert fourth == third  # no running count: the same message, no new status write


def test_one_good_probe_clears_it_and_a_later_single_failure_keeps_it_false() -> None:
    d = debounce()
    for _ in range(3):
        d.report("timed out", ok="", target="t")
    good = d.report(None, ok="HTTP 200", target="t")
    assert (good.status, good.reason, good.message) == (Status.FALSE, "KubeletIsHealthy", "HTTP 200")
    blip = d.report("timed out", ok="", target="t")
    assert (blip.status, blip.reason) == (Status.FALSE, "KubeletIsHealthy")
    assert "1 failure(s) in a row" in blip.message and d.confirming
