"""hack/kcp/descheduler.py's log parser: strict about what descheduler finished writing, patient with the line it
is still writing (the benchmark reads the log of a running descheduler)."""

from __future__ import annotations

import json

import pytest

from hack.kcp import descheduler


def line(msg: str, **fields: object) -> str:
    return json.dumps({"ts": 1000.0, "msg": msg, "v": 1, **fields}) + "\n"


EVICTION = line(descheduler.DRY_RUN_EVICTION, pod={"namespace": "ns", "name": "p"}, node="n1",
                strategy="LowNodeUtilization", reason="", profile="p")
ONE_CYCLE = line(descheduler.START_MARKER) + EVICTION + line(descheduler.END_MARKER, totalEvicted=1)


def test_a_finished_cycle_is_parsed_with_its_evictions() -> None:
    cycles, running = descheduler.parse(ONE_CYCLE)
    assert running is None
    assert [c.pods for c in cycles] == [{("ns", "p")}]


@pytest.mark.parametrize("cut", [1, 10, len(EVICTION) - 2], ids=["one-byte", "mid-record", "all-but-the-brace"])
def test_a_half_written_last_line_of_a_running_descheduler_waits_for_the_next_read(cut: int) -> None:
    text = line(descheduler.START_MARKER) + EVICTION[:cut]
    cycles, running = descheduler.parse(text, still_writing=True)
    assert cycles == [] and running is not None and running.evictions == []
    cycles, running = descheduler.parse(ONE_CYCLE + EVICTION[:cut], still_writing=True)
    assert len(cycles) == 1 and running is None


def test_a_complete_malformed_line_is_an_error_even_while_descheduler_writes() -> None:
    text = line(descheduler.START_MARKER) + "panic: runtime error\n" + EVICTION[:5]
    with pytest.raises(descheduler.DeschedulerError, match=r":2: not a JSON log line .*panic: runtime error"):
        descheduler.parse(text, still_writing=True)


def test_a_partial_last_line_after_descheduler_exited_is_an_error() -> None:
    with pytest.raises(descheduler.DeschedulerError, match="not a JSON log line"):
        descheduler.parse(ONE_CYCLE + EVICTION[:10])


def test_a_record_is_split_only_at_newlines() -> None:
    # U+0085 and U+2028 are line breaks to str.splitlines(), but not to descheduler's JSON encoder.
    weird = line(descheduler.DRY_RUN_EVICTION, pod={"namespace": "ns", "name": "p"}, node="n1",
                 strategy="s", reason="a\u0085b\u2028c", profile="p")
    weird = weird.replace("\\u0085", "\u0085").replace("\\u2028", "\u2028")  # as written, unescaped
    text = line(descheduler.START_MARKER) + weird + line(descheduler.END_MARKER, totalEvicted=1)
    (cycle,), _ = descheduler.parse(text)
    assert cycle.evictions[0].reason == "a\u0085b\u2028c"


def test_a_second_eviction_of_a_pod_the_dry_run_already_evicted_is_not_an_error_nor_an_eviction() -> None:
    gone = json.dumps({"ts": 1000.0, "msg": "Error evicting pod", "pod": {"name": "p", "namespace": "ns"},
                       "err": 'pod not found when evicting "p": pods "p" not found'}) + "\n"
    said_again = json.dumps({"ts": 1000.0, "msg": "eviction failed", "plugin": "RemovePodsViolatingTopologySpread"
                             "Constraint", "err": 'pod not found when evicting "p": pods "p" not found'}) + "\n"
    (cycle,), _ = descheduler.parse(line(descheduler.START_MARKER) + EVICTION + gone + said_again
                                    + line(descheduler.END_MARKER, totalEvicted=1))
    assert [e.name for e in cycle.evictions] == ["p"]
    other = gone.replace("pod not found when evicting", "pods is forbidden when evicting")
    with pytest.raises(descheduler.DeschedulerError, match="descheduler logged an error"):
        descheduler.parse(line(descheduler.START_MARKER) + other)
