"""MemoryExhaustion: PSI and MemAvailable under the host root, sustained like CPU; OOM kills as events."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

import pytest

from agent.bounds import field_problems
from agent.checks.memory import Config, MemoryExhaustion, Thresholds
from agent.host import HostRoot
from agent.model import Check, CheckTiming, EventReport, Observation, Severity, Status

NOW = dt.datetime(2024, 5, 1, 12, 0, 0, tzinfo=dt.UTC)
STEP = dt.timedelta(seconds=30)
WINDOW = dt.timedelta(minutes=2)  # 5 observations 30 s apart span it


def psi(some_avg60: float, full_avg60: float = 0.0) -> str:
    return (f"some avg10=0.00 avg60={some_avg60:.2f} avg300=0.00 total=1000\n"
            f"full avg10=0.00 avg60={full_avg60:.2f} avg300=0.00 total=500\n")


def meminfo(total_kib: int, available_kib: int) -> str:
    return f"MemTotal:       {total_kib} kB\nMemFree:          100000 kB\nMemAvailable:   {available_kib} kB\n"


def vmstat(oom_kills: int) -> str:
    return f"nr_free_pages 25000\npgfault 123456\noom_kill {oom_kills}\n"


GIB = 2**20  # in kB
CALM = {"proc/pressure/memory": psi(2), "proc/meminfo": meminfo(16 * GIB, 8 * GIB), "proc/vmstat": vmstat(0)}


def write(root: Path, files: dict[str, str | bytes | None]) -> None:
    """None deletes the file, bytes are written raw (for undecodable data)."""
    for rel, content in files.items():
        path = root / rel
        if content is None:
            path.unlink(missing_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


def make(tmp_path: Path, window: dt.timedelta = WINDOW) -> MemoryExhaustion:
    write(tmp_path, CALM)
    return MemoryExhaustion(Config(window=window), HostRoot(tmp_path))


def observe(check: MemoryExhaustion, at: dt.datetime) -> Observation:
    obs = asyncio.run(check.observe(at))
    assert (obs.check, obs.at, obs.error) == ("memory", at, "")
    return obs


def timeline(check: MemoryExhaustion, root: Path, phases: list[tuple[dict[str, str | bytes | None], int]]) -> str:
    """Statuses observed 30 s apart, one letter each (T/F/U, "-" when silent), a space between phases."""
    out, at = [], NOW
    for files, steps in phases:
        write(root, files)
        letters = ""
        for _ in range(steps):
            conditions = observe(check, at).conditions
            letters += str(conditions[0].status)[0] if conditions else "-"
            at += STEP
        out.append(letters)
    return " ".join(out)


def test_the_check_has_the_shape_the_supervisor_runs(tmp_path: Path) -> None:
    config = Config()
    check: Check = MemoryExhaustion(config, HostRoot(tmp_path))
    assert (check.name, check.condition_types, check.timing) == ("memory", ("MemoryExhaustion",), config.timing)
    assert (config.window, config.thresholds) == (dt.timedelta(minutes=5), Thresholds(40.0, 10.0, 5.0))


@pytest.mark.parametrize("fault", [
    pytest.param({"proc/pressure/memory": psi(55)}, id="psi-some-over-threshold"),
    pytest.param({"proc/pressure/memory": psi(30, full_avg60=15)}, id="psi-full-over-threshold"),
    pytest.param({"proc/meminfo": meminfo(16 * GIB, GIB // 2)}, id="available-below-5-percent"),
    pytest.param({"proc/pressure/memory": None, "proc/meminfo": meminfo(16 * GIB, GIB // 2)},
                 id="available-alone-when-the-kernel-has-no-psi"),
])
def test_memory_exhaustion_turns_true_after_a_sustained_window_and_false_after_a_calm_one(
        tmp_path: Path, fault: dict[str, str | None]) -> None:
    check = make(tmp_path)
    assert timeline(check, tmp_path, [(CALM, 5), (fault, 5), (CALM, 5)]) == "----F FFFFT TTTTF"


def test_a_short_squeeze_never_turns_the_condition_true(tmp_path: Path) -> None:
    check = make(tmp_path)
    squeeze = {"proc/pressure/memory": psi(90, full_avg60=50)}
    assert timeline(check, tmp_path, [(CALM, 5), (squeeze, 4), (CALM, 1)]) == "----F FFFF F"


def test_the_message_names_the_deciding_figures_and_holds_them_while_the_status_holds(tmp_path: Path) -> None:
    check = make(tmp_path, window=dt.timedelta(0))
    write(tmp_path, {"proc/meminfo": meminfo(16 * GIB, GIB // 2)})
    first = observe(check, NOW).conditions
    write(tmp_path, {"proc/meminfo": meminfo(16 * GIB, GIB // 4)})
    assert observe(check, NOW + STEP).conditions == first
    assert first[0].reason == "MemoryExhausted"
    assert "available 3.1% of 16.0 GiB (threshold 5%)" in first[0].message
    assert "memory PSI some avg60=2.0% full avg60=0.0%" in first[0].message


@pytest.mark.parametrize(("counters", "events"), [
    pytest.param([3], [()], id="the-first-reading-is-only-a-baseline"),
    pytest.param([3, 3], [(), ()], id="no-kill-no-event"),
    pytest.param([3, 5], [(), ("2 processes killed by the OOM killer since last check",)], id="kills-since-last-check"),
    pytest.param([3, 5, 6], [(), ("2 processes killed by the OOM killer since last check",),
                             ("1 processes killed by the OOM killer since last check",)], id="every-increase-once"),
    pytest.param([9, 2, 4], [(), (), ("2 processes killed by the OOM killer since last check",)],
                 id="a-counter-that-went-back-is-a-new-baseline"),
])
def test_oom_kills_are_reported_as_events_when_the_counter_rises(
        tmp_path: Path, counters: list[int], events: list[tuple[str, ...]]) -> None:
    check = make(tmp_path)
    seen = []
    for i, count in enumerate(counters):
        write(tmp_path, {"proc/vmstat": vmstat(count)})
        obs = observe(check, NOW + i * STEP)
        assert all(e.reason == "OOMKilling" and e.severity is Severity.WARNING for e in obs.events)
        seen.append(tuple(e.message for e in obs.events))
    assert seen == events


def test_kills_made_while_the_counter_was_unreadable_are_reported_when_it_reads_again(tmp_path: Path) -> None:
    check = make(tmp_path, window=dt.timedelta(0))
    write(tmp_path, {"proc/vmstat": vmstat(1)})
    observe(check, NOW)
    write(tmp_path, {"proc/vmstat": "oom_kill lots\n"})
    blind = observe(check, NOW + STEP)
    assert blind.events == ()
    assert blind.conditions[0].status is Status.FALSE  # the counter only feeds events, not the condition
    assert "OOM kill counter unavailable (/proc/vmstat: oom_kill 'lots' is not a number)" in blind.conditions[0].message
    write(tmp_path, {"proc/vmstat": vmstat(4)})
    assert observe(check, NOW + 2 * STEP).events == (
        EventReport("OOMKilling", "3 processes killed by the OOM killer since last check"),)


@pytest.mark.parametrize(("vmstat_text", "in_message"), [
    pytest.param(None, "/proc/vmstat: No such file", id="vmstat-missing"),
    pytest.param("", "no oom_kill counter", id="vmstat-empty"),
    pytest.param("nr_free_pages 1\n", "no oom_kill counter", id="kernel-without-the-counter"),
    pytest.param("oom_kill -4\n", "oom_kill -4 is negative", id="negative-counter"),
])
def test_an_unreadable_oom_counter_is_noted_without_events_or_an_exception(
        tmp_path: Path, vmstat_text: str | None, in_message: str) -> None:
    check = make(tmp_path, window=dt.timedelta(0))
    write(tmp_path, {"proc/vmstat": vmstat_text})
    obs = observe(check, NOW)
    assert obs.events == ()
    assert obs.conditions[0].status is Status.FALSE
    assert in_message in obs.conditions[0].message


@pytest.mark.parametrize(("files", "in_message"), [
    pytest.param({"proc/meminfo": None}, "/proc/meminfo: No such file", id="meminfo-missing"),
    pytest.param({"proc/meminfo": ""}, "/proc/meminfo: empty", id="meminfo-empty"),
    pytest.param({"proc/meminfo": "lorem ipsum\n"}, "no MemTotal", id="meminfo-garbage"),
    pytest.param({"proc/meminfo": "MemTotal: 1000 kB\n"}, "no MemAvailable", id="meminfo-without-available"),
    pytest.param({"proc/meminfo": "MemTotal: many kB\nMemAvailable: 1 kB\n"}, "'many' is not a number",
                 id="meminfo-not-a-number"),
    pytest.param({"proc/meminfo": "MemTotal:\nMemAvailable: 1 kB\n"}, "MemTotal has no value", id="meminfo-no-value"),
    pytest.param({"proc/meminfo": meminfo(0, 0)}, "MemTotal 0 kB is not positive", id="meminfo-zero-total"),
    pytest.param({"proc/meminfo": meminfo(1000, -5)}, "MemAvailable -5 kB is outside", id="meminfo-negative"),
    pytest.param({"proc/meminfo": meminfo(1000, 2000)}, "MemAvailable 2000 kB is outside",
                 id="meminfo-more-available-than-total"),
    pytest.param({"proc/meminfo": b"MemTotal: \xff kB\n"}, "/proc/meminfo", id="meminfo-not-text"),
    pytest.param({"proc/pressure/memory": ""}, "/proc/pressure/memory: empty", id="psi-empty"),
    pytest.param({"proc/pressure/memory": "some avg10=1 avg60=-1 avg300=1 total=1\n"}, "not a percentage",
                 id="psi-negative"),
    pytest.param({"proc/pressure/memory": "some total=1 avg10 avg60 avg300\n"}, "not key=value", id="psi-garbage"),
])
def test_bad_sensor_data_reports_unknown_with_the_cause(
        tmp_path: Path, files: dict[str, str | bytes | None], in_message: str) -> None:
    check = make(tmp_path, window=dt.timedelta(0))
    write(tmp_path, files)
    (report,) = observe(check, NOW).conditions
    assert (report.status, report.reason) == (Status.UNKNOWN, "BadSensorData")
    assert in_message in report.message


def test_bad_sensor_data_does_not_stop_oom_events(tmp_path: Path) -> None:
    check = make(tmp_path)
    observe(check, NOW)
    write(tmp_path, {"proc/meminfo": "", "proc/vmstat": vmstat(1)})
    obs = observe(check, NOW + STEP)
    assert obs.conditions[0].status is Status.UNKNOWN
    assert [e.reason for e in obs.events] == ["OOMKilling"]


@pytest.mark.parametrize(("config", "errors"), [
    pytest.param(Config(), [], id="defaults"),
    pytest.param(Config(thresholds=Thresholds(min_available_percent=0)), [], id="available-check-off"),
    pytest.param(Config(window=dt.timedelta(minutes=-1)), ["window: must not be negative, got -1m0s"],
                 id="negative-window"),
    pytest.param(Config(thresholds=Thresholds(some_avg60=-1, full_avg60=120)),
                 ['thresholds.someAvg60: must be above 0 and at most 100, got -1',
                  'thresholds.fullAvg60: must be above 0 and at most 100, got 120'], id="psi-out-of-range"),
    pytest.param(Config(thresholds=Thresholds(min_available_percent=100)),
                 ['thresholds.minAvailablePercent: must be at least 0 and below 100, got 100'], id="available-100"),
    pytest.param(Config(timing=CheckTiming(timeout=dt.timedelta(0))),
                 ['timeout: must be positive, got 0s'], id="zero-timeout"),
])
def test_validate_reports_every_bad_field(config: Config, errors: list[str]) -> None:
    assert problems(config) == errors


def problems(config: object) -> list[str]:
    return [str(problem) for problem in field_problems(config)]
