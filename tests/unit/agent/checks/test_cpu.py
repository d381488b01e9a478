"""CPUPressure: PSI and load per CPU read under the host root, True only when sustained, Unknown on bad data."""

from __future__ import annotations

import asyncio
import datetime as dt
import errno
from pathlib import Path

import pytest

from agent.bounds import field_problems
from agent.checks.cpu import Config, CPUPressure, Thresholds, parse_cpu_list
from agent.host import HostRoot
from agent.model import Check, CheckTiming, ConditionReport, Status

NOW = dt.datetime(2024, 5, 1, 12, 0, 0, tzinfo=dt.UTC)
STEP = dt.timedelta(seconds=30)
WINDOW = dt.timedelta(minutes=2)  # 5 observations 30 s apart span it


def psi(some_avg60: float) -> str:
    return (f"some avg10={some_avg60:.2f} avg60={some_avg60:.2f} avg300=1.00 total=123456\n"
            "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")


CALM = {"proc/pressure/cpu": psi(5), "proc/loadavg": "2.00 1.50 1.00 3/412 9876\n",
        "sys/devices/system/cpu/online": "0-3\n"}  # 4 CPUs, 0.5 load per CPU


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


def make(tmp_path: Path, window: dt.timedelta = WINDOW, **thresholds: float) -> CPUPressure:
    write(tmp_path, CALM)
    return CPUPressure(Config(window=window, thresholds=Thresholds(**thresholds)), HostRoot(tmp_path))


def observe(check: CPUPressure, at: dt.datetime) -> ConditionReport | None:
    obs = asyncio.run(check.observe(at))
    assert (obs.check, obs.at, obs.error, obs.events) == ("cpu", at, "", ())
    assert len(obs.conditions) <= 1
    return obs.conditions[0] if obs.conditions else None


def timeline(check: CPUPressure, root: Path, phases: list[tuple[dict[str, str | bytes | None], int]]) -> str:
    """Statuses observed 30 s apart, one letter each (T/F/U, "-" when silent), a space between phases."""
    out, at = [], NOW
    for files, steps in phases:
        write(root, files)
        letters = ""
        for _ in range(steps):
            report = observe(check, at)
            letters += "-" if report is None else str(report.status)[0]
            at += STEP
        out.append(letters)
    return " ".join(out)


def test_the_check_has_the_shape_the_supervisor_runs(tmp_path: Path) -> None:
    config = Config()
    check: Check = CPUPressure(config, HostRoot(tmp_path))
    assert (check.name, check.condition_types, check.timing) == ("cpu", ("CPUPressure",), config.timing)
    assert (config.window, config.thresholds) == (dt.timedelta(minutes=5), Thresholds(80.0, 3.0))


@pytest.mark.parametrize("fault", [
    pytest.param({"proc/pressure/cpu": psi(95)}, id="psi-some-avg60-over-threshold"),
    pytest.param({"proc/loadavg": "13.00 9.00 5.00 40/412 9876\n"}, id="load-over-3-per-cpu"),
    pytest.param({"proc/pressure/cpu": None, "proc/loadavg": "13.00 9.00 5.00 40/412 9876\n"},
                 id="load-alone-when-the-kernel-has-no-psi"),
])
def test_cpu_pressure_turns_true_after_a_sustained_window_and_false_after_a_calm_one(
        tmp_path: Path, fault: dict[str, str | None]) -> None:
    check = make(tmp_path)
    assert timeline(check, tmp_path, [(CALM, 5), (fault, 5), (CALM, 5)]) == "----F FFFFT TTTTF"


def test_a_short_spike_never_turns_the_condition_true(tmp_path: Path) -> None:
    check = make(tmp_path)
    spike = {"proc/pressure/cpu": psi(99)}
    assert timeline(check, tmp_path, [(CALM, 5), (spike, 4), (CALM, 1), (spike, 4)]) == "----F FFFF F FFFF"


def test_nothing_is_reported_before_the_first_full_window_so_the_node_keeps_its_status(tmp_path: Path) -> None:
    check = make(tmp_path)
    assert timeline(check, tmp_path, [({"proc/pressure/cpu": psi(95)}, 5)]) == "----T"


def test_a_zero_window_decides_on_every_observation(tmp_path: Path) -> None:
    check = make(tmp_path, window=dt.timedelta(0))
    assert timeline(check, tmp_path, [(CALM, 1), ({"proc/pressure/cpu": psi(95)}, 1), (CALM, 1)]) == "F T F"


def test_a_bad_reading_breaks_the_run_but_keeps_the_decided_status(tmp_path: Path) -> None:
    check = make(tmp_path)
    hot, garbage = {"proc/pressure/cpu": psi(95)}, {"proc/loadavg": "garbage\n"}
    fixed = {"proc/loadavg": CALM["proc/loadavg"]}
    # The run restarts after the bad reading: the window counts again from the next good observation.
    assert timeline(check, tmp_path, [(CALM, 5), (hot, 3), (garbage, 1), (fixed, 5)]) == "----F FFF U FFFFT"
    assert timeline(check, tmp_path, [(garbage, 1), (fixed, 1)]) == "U T"


def test_a_clock_that_goes_backwards_restarts_the_run(tmp_path: Path) -> None:
    check = make(tmp_path)
    write(tmp_path, {"proc/pressure/cpu": psi(95)})
    earlier = NOW - dt.timedelta(hours=1)
    assert observe(check, NOW) is None
    assert observe(check, earlier) is None
    assert observe(check, earlier + STEP) is None
    report = observe(check, earlier + WINDOW)  # counted from the jump back, not stuck waiting for NOW + WINDOW
    assert report is not None and report.status is Status.TRUE


def test_the_message_keeps_the_deciding_figures_so_the_node_is_not_rewritten_every_interval(tmp_path: Path) -> None:
    check = make(tmp_path, window=dt.timedelta(0))
    write(tmp_path, {"proc/loadavg": "13.00 9.00 5.00 40/412 9876\n"})
    first = observe(check, NOW)
    write(tmp_path, {"proc/loadavg": "14.50 9.00 5.00 40/412 9876\n"})
    assert observe(check, NOW + STEP) == first
    assert first is not None and first.reason == "CPUOverloaded"
    assert "load 13.00 on 4 CPUs = 3.25 per CPU (threshold 3)" in first.message
    assert "cpu PSI some avg60=5.0% full avg60=0.0% (threshold 80%)" in first.message


def test_the_cpu_count_comes_from_cpuinfo_when_sysfs_lacks_it(tmp_path: Path) -> None:
    check = make(tmp_path, window=dt.timedelta(0))
    cpuinfo = "processor\t: 0\nmodel name\t: x\n\nprocessor\t: 1\nmodel name\t: x\n"
    write(tmp_path, {"sys/devices/system/cpu/online": None, "proc/cpuinfo": cpuinfo,
                     "proc/loadavg": "7.00 1.00 1.00 1/100 1\n"})
    report = observe(check, NOW)
    assert report is not None and report.status is Status.TRUE
    assert "on 2 CPUs = 3.50 per CPU" in report.message


class _PSIDisabledHost(HostRoot):
    """A kernel booted with psi=0 has the files but refuses to read them."""

    def read_text(self, host_path: str) -> str:
        if host_path.startswith("/proc/pressure/"):
            raise OSError(errno.EOPNOTSUPP, "Operation not supported")
        return super().read_text(host_path)


def test_psi_disabled_at_boot_is_judged_on_load_alone(tmp_path: Path) -> None:
    write(tmp_path, CALM)
    check = CPUPressure(Config(window=dt.timedelta(0)), _PSIDisabledHost(tmp_path))
    report = observe(check, NOW)
    assert report is not None and report.status is Status.FALSE
    assert "cpu PSI unavailable" in report.message


@pytest.mark.parametrize(("files", "in_message"), [
    pytest.param({"proc/loadavg": None}, "/proc/loadavg: No such file", id="loadavg-missing"),
    pytest.param({"proc/loadavg": ""}, "/proc/loadavg: empty", id="loadavg-empty"),
    pytest.param({"proc/loadavg": "lots 1 1 1/1 1\n"}, "not a load average", id="loadavg-garbage"),
    pytest.param({"proc/loadavg": "-1.00 1.00 1.00 1/1 1\n"}, "out of range", id="loadavg-negative"),
    pytest.param({"proc/loadavg": "nan 1.00 1.00 1/1 1\n"}, "out of range", id="loadavg-nan"),
    pytest.param({"proc/loadavg": b"\xff\xfe\n"}, "/proc/loadavg", id="loadavg-not-text"),
    pytest.param({"proc/pressure/cpu": ""}, "/proc/pressure/cpu: empty", id="psi-empty"),
    pytest.param({"proc/pressure/cpu": "pressure is high\n"}, "unexpected line", id="psi-garbage"),
    pytest.param({"proc/pressure/cpu": "some avg10=1 avg60=x avg300=1 total=1\n"}, "not a number", id="psi-not-number"),
    pytest.param({"proc/pressure/cpu": "some avg10=1 avg60=-3.00 avg300=1 total=1\n"}, "not a percentage",
                 id="psi-negative-average"),
    pytest.param({"proc/pressure/cpu": "some avg10=1 avg60=130 avg300=1 total=1\n"}, "not a percentage",
                 id="psi-over-100"),
    pytest.param({"proc/pressure/cpu": "some avg10=1 avg60=1 avg300=1 total=-9\n"}, "negative",
                 id="psi-negative-total"),
    pytest.param({"proc/pressure/cpu": "some avg10=1 avg60=1 avg300=1\n"}, "missing total", id="psi-missing-field"),
    pytest.param({"proc/pressure/cpu": "full avg10=1 avg60=1 avg300=1 total=1\n"}, "no 'some' line",
                 id="psi-without-some"),
    pytest.param({"proc/pressure/cpu": psi(1) + psi(1)}, "appears twice", id="psi-repeated-lines"),
    pytest.param({"sys/devices/system/cpu/online": "zero-three\n"}, "not a CPU list", id="cpu-list-garbage"),
    pytest.param({"sys/devices/system/cpu/online": ""}, "not a CPU list", id="cpu-list-empty"),
    pytest.param({"sys/devices/system/cpu/online": "3-0\n"}, "not a CPU list", id="cpu-list-reversed"),
    pytest.param({"sys/devices/system/cpu/online": None}, "/proc/cpuinfo: No such file", id="no-cpu-count-at-all"),
    pytest.param({"sys/devices/system/cpu/online": None, "proc/cpuinfo": "flags: fpu\n"}, "no processor entries",
                 id="cpuinfo-without-processors"),
])
def test_bad_sensor_data_reports_unknown_with_the_cause(
        tmp_path: Path, files: dict[str, str | bytes | None], in_message: str) -> None:
    check = make(tmp_path, window=dt.timedelta(0))
    write(tmp_path, files)
    report = observe(check, NOW)
    assert report is not None
    assert (report.status, report.reason) == (Status.UNKNOWN, "BadSensorData")
    assert in_message in report.message


def test_a_psi_path_that_cannot_be_read_is_bad_data_not_missing_psi(tmp_path: Path) -> None:
    check = make(tmp_path, window=dt.timedelta(0))
    (tmp_path / "proc/pressure/cpu").unlink()
    (tmp_path / "proc/pressure/cpu").mkdir()
    report = observe(check, NOW)
    assert report is not None and report.status is Status.UNKNOWN
    assert "/proc/pressure/cpu: Is a directory" in report.message


@pytest.mark.parametrize(("text", "count"), [
    pytest.param("0\n", 1, id="one"),
    pytest.param("0-3\n", 4, id="range"),
    pytest.param("0-3,6,8-9\n", 7, id="ranges-and-singles"),
])
def test_cpu_lists_count_every_cpu_they_name(text: str, count: int) -> None:
    assert parse_cpu_list(text) == count


@pytest.mark.parametrize(("config", "errors"), [
    pytest.param(Config(), [], id="defaults"),
    pytest.param(Config(window=dt.timedelta(0)), [], id="zero-window"),
    pytest.param(Config(window=dt.timedelta(seconds=-1)), ["window: must not be negative, got -1s"],
                 id="negative-window"),
    pytest.param(Config(thresholds=Thresholds(some_avg60=0)),
                 ["thresholds.someAvg60: must be above 0 and at most 100, got 0"],
                 id="psi-zero"),
    pytest.param(Config(thresholds=Thresholds(some_avg60=101)),
                 ["thresholds.someAvg60: must be above 0 and at most 100, got 101"],
                 id="psi-over-100"),
    pytest.param(Config(thresholds=Thresholds(some_avg60=float("nan"))),
                 ['thresholds.someAvg60: must be above 0 and at most 100, got nan'], id="psi-nan"),
    pytest.param(Config(thresholds=Thresholds(load_per_cpu=0)), ['thresholds.loadPerCpu: must be positive, got 0'],
                 id="load-zero"),
    pytest.param(Config(timing=CheckTiming(interval=dt.timedelta(0))),
                 ["interval: must be at least 1s (a check's findings reach the Node at most once a second; sampling "
                  "faster only costs CPU), got 0s",
                  'timeout: must not be longer than interval (0s), got 10s'], id="zero-interval"),
    pytest.param(Config(timing=CheckTiming(interval=dt.timedelta(seconds=5), timeout=dt.timedelta(seconds=6))),
                 ['timeout: must not be longer than interval (5s), got 6s'], id="timeout-over-interval"),
])
def test_validate_reports_every_bad_field(config: Config, errors: list[str]) -> None:
    assert problems(config) == errors


def problems(config: object) -> list[str]:
    return [str(problem) for problem in field_problems(config)]
