"""The custom plugin monitor: NPD's status logic on canned results, then scheduling and limits on real plugins."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from agent.checks.custom_plugin import CustomPluginMonitor
from agent.model import ConditionReport, EventReport, Observation, Severity, Status
from agent.npd.plugin_config import DefaultCondition, PluginConfig, PluginMonitorConfig, PluginRule, RuleType, load
from agent.npd.plugin_runner import WORST_CASE_OVERHEAD, PluginResult
from tests.unit.agent.npd.test_plugin_runner import PLUGINS, assert_group_gone
from tests.waiting import wait_until

T0 = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
SECOND = dt.timedelta(seconds=1)
DISK = DefaultCondition("DiskProblem", "DiskIsHealthy", "all disks are healthy")


def rule(name: str, rule_type: RuleType = RuleType.PERMANENT, *, condition: str = "DiskProblem",
         timeout: float = 5, interval: float = 30) -> PluginRule:
    return PluginRule(type=rule_type, reason=f"{name}Reason", path=Path(name),
                      condition=condition if rule_type is RuleType.PERMANENT else "",
                      timeout=timeout * SECOND, invoke_interval=interval * SECOND)


def config(*rules: PluginRule, concurrency: int = 3, message_updates: bool = False) -> PluginMonitorConfig:
    return PluginMonitorConfig(
        source="disk-plugin-monitor", rules=rules, conditions=(DISK,),
        plugin_config=PluginConfig(concurrency=concurrency,
                                   enable_message_change_based_condition_update=message_updates))


class FakeRunner:
    """Answers each plugin (by path) with a canned status and message, counting calls and overlap."""

    def __init__(self, answers: Mapping[str, tuple[Status, str]] | None = None) -> None:
        self.answers = dict(answers or {})
        self.calls: list[str] = []
        self.running = 0
        self.most_at_once = 0

    async def __call__(self, path: str | os.PathLike[str], args: Sequence[str] = (), *, timeout: float,
                       max_output: int, env: Mapping[str, str] | None = None) -> PluginResult:
        name = os.fspath(path)
        self.calls.append(name)
        self.running += 1
        self.most_at_once = max(self.most_at_once, self.running)
        for _ in range(3):  # yield a few times so that every plugin allowed to start does start meanwhile
            await asyncio.sleep(0)
        self.running -= 1
        status, message = self.answers.get(name, (Status.FALSE, "fine"))
        return PluginResult(status, message, None, False, 0.0)


def observe(monitor: CustomPluginMonitor, at: dt.datetime = T0) -> Observation:
    return asyncio.run(monitor.observe(at))


OK, PROBLEM, UNKNOWN = Status.FALSE, Status.TRUE, Status.UNKNOWN


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        (OK, OK, ConditionReport("DiskProblem", Status.FALSE, "DiskIsHealthy", "all disks are healthy")),
        (PROBLEM, OK, ConditionReport("DiskProblem", Status.TRUE, "smartReason", "said smart")),
        (OK, PROBLEM, ConditionReport("DiskProblem", Status.TRUE, "ioReason", "said io")),
        (PROBLEM, PROBLEM, ConditionReport("DiskProblem", Status.TRUE, "smartReason", "said smart")),
        (UNKNOWN, OK, ConditionReport("DiskProblem", Status.UNKNOWN, "DiskIsHealthy", "said smart")),
        (UNKNOWN, PROBLEM, ConditionReport("DiskProblem", Status.TRUE, "ioReason", "said io")),
        (UNKNOWN, UNKNOWN, ConditionReport("DiskProblem", Status.UNKNOWN, "DiskIsHealthy", "said smart")),
    ],
    ids=["all-ok-is-false-with-defaults", "first-problem", "second-problem", "first-problem-wins",
         "unknown-beats-ok", "problem-beats-unknown", "all-unknown"],
)
def test_the_permanent_rules_of_a_condition_decide_it_together(first, second, expected):
    runner = FakeRunner({"smart": (first, "said smart"), "io": (second, "said io")})
    monitor = CustomPluginMonitor(config(rule("smart"), rule("io")), runner=runner)

    assert observe(monitor).conditions == (expected,)


@pytest.mark.parametrize(
    ("status", "events"),
    [
        (PROBLEM, (EventReport("conntrackReason", "table 95% full", Severity.WARNING),)),
        (OK, ()),
        (UNKNOWN, ()),
    ],
    ids=["problem-is-a-warning-event", "ok-is-silent", "unknown-is-silent"],
)
def test_a_temporary_rule_raises_an_event_only_for_a_problem(status, events):
    runner = FakeRunner({"conntrack": (status, "table 95% full")})
    monitor = CustomPluginMonitor(config(rule("conntrack", RuleType.TEMPORARY)), runner=runner)

    observation = observe(monitor)

    assert (observation.events, observation.conditions) == (events, ())


@pytest.mark.parametrize(("message_updates", "message"), [(False, "3 bad sectors"), (True, "9 bad sectors")],
                         ids=["npd-default-keeps-the-first-message", "opted-in-takes-the-new-message"])
def test_a_new_message_alone_updates_a_true_condition_only_when_enabled(message_updates, message):
    runner = FakeRunner({"smart": (PROBLEM, "3 bad sectors")})
    monitor = CustomPluginMonitor(config(rule("smart"), message_updates=message_updates), runner=runner)
    observe(monitor, T0)
    runner.answers["smart"] = (PROBLEM, "9 bad sectors")

    assert observe(monitor, T0 + 30 * SECOND).conditions[0].message == message


def test_a_condition_recovers_when_its_plugin_says_ok_again():
    runner = FakeRunner({"smart": (PROBLEM, "3 bad sectors")})
    monitor = CustomPluginMonitor(config(rule("smart")), runner=runner)
    observe(monitor, T0)
    runner.answers["smart"] = (OK, "fine")

    assert observe(monitor, T0 + 30 * SECOND).conditions == (
        ConditionReport("DiskProblem", Status.FALSE, "DiskIsHealthy", "all disks are healthy"),)


def test_each_rule_runs_at_its_own_interval_and_its_last_verdict_stands_between_runs():
    runner = FakeRunner({"daily": (PROBLEM, "iptables mismatch")})
    monitor = CustomPluginMonitor(config(rule("often", RuleType.TEMPORARY), rule("daily", interval=90)),
                                  runner=runner)

    observations = [observe(monitor, T0 + s * SECOND) for s in (0, 30, 60, 89.5, 120)]

    assert runner.calls == ["often", "daily", "often", "often", "often", "daily", "often"]
    assert all(o.conditions[0].status is Status.TRUE for o in observations)


def test_at_most_concurrency_plugins_run_at_once():
    runner = FakeRunner()
    monitor = CustomPluginMonitor(config(*(rule(f"p{i}") for i in range(7)), concurrency=2), runner=runner)

    observe(monitor)

    assert (len(runner.calls), runner.most_at_once) == (7, 2)


def test_the_check_wakes_at_the_invoke_interval_and_its_timeout_covers_every_wave():
    rules = [rule("a", timeout=2), rule("b", timeout=10), rule("c"), rule("d")]
    monitor = CustomPluginMonitor(config(*rules, concurrency=3), runner=FakeRunner())

    assert monitor.timing.interval == 30 * SECOND
    # 4 rules at concurrency 3 take two waves, each as long as the slowest rule plus the kill-and-reap overhead.
    assert monitor.timing.timeout == 2 * (10 + WORST_CASE_OVERHEAD) * SECOND + SECOND
    assert (monitor.name, monitor.condition_types) == ("disk-plugin-monitor", ("DiskProblem",))


# --- real plugins, loaded from an NPD file ------------------------------------------------------------


def write_monitor(tmp_path: Path, rules: list[dict[str, object]], concurrency: int = 3) -> Path:
    doc = {
        "plugin": "custom",
        "pluginConfig": {"invoke_interval": "10s", "timeout": "5s", "max_output_length": 80,
                         "concurrency": concurrency},
        "source": "test-plugin-monitor",
        "conditions": [{"type": t, "reason": f"No{t}", "message": f"no {t}"} for t in ("Ntp", "Disk", "Hung")],
        "rules": rules,
    }
    file = tmp_path / "monitor.json"
    file.write_text(json.dumps(doc))
    return file


def test_real_plugins_become_conditions_and_events_and_a_hung_one_is_unknown(tmp_path):
    pgid_file = tmp_path / "pgid"
    file = write_monitor(tmp_path, [
        {"type": "permanent", "condition": "Ntp", "reason": "NTPIsDown", "path": str(PLUGINS / "non-ok.sh")},
        {"type": "permanent", "condition": "Disk", "reason": "DiskFailing", "path": str(PLUGINS / "ok.sh")},
        {"type": "permanent", "condition": "Hung", "reason": "Hung", "path": str(PLUGINS / "hangs.sh"),
         "args": [str(pgid_file)], "timeout": "500ms"},
        {"type": "temporary", "reason": "NTPIsDown", "path": str(PLUGINS / "non-ok.sh")},
        {"type": "temporary", "reason": "Flaky", "path": str(PLUGINS / "exit-2.sh")},
    ])
    monitor = CustomPluginMonitor(load(file))

    observation = observe(monitor)

    assert observation.check == "test-plugin-monitor"
    assert observation.conditions[:2] == (
        ConditionReport("Ntp", Status.TRUE, "NTPIsDown", "ntp is not synchronised"),
        ConditionReport("Disk", Status.FALSE, "NoDisk", "no Disk"),
    )
    hung = observation.conditions[2]
    assert (hung.type, hung.status, hung.reason) == ("Hung", Status.UNKNOWN, "NoHung")
    assert hung.message.startswith("timeout when running plugin")
    assert observation.events == (EventReport("NTPIsDown", "ntp is not synchronised"),)
    assert_group_gone(pgid_file)


def test_real_plugins_never_exceed_the_concurrency_limit(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    counter = {"type": "temporary", "reason": "Counted", "path": str(PLUGINS / "counts-concurrency.sh"),
               "args": [str(shared)]}
    monitor = CustomPluginMonitor(load(write_monitor(tmp_path, [counter] * 5, concurrency=2)))

    observe(monitor)

    counts = [int(n) for n in (shared / "counts").read_text().split()]
    assert len(counts) == 5
    assert max(counts) == 2, f"each plugin saw this many running (itself included): {counts}"


def test_a_cancelled_round_kills_every_plugin_it_started(tmp_path):
    pgid_files = [tmp_path / f"pgid{i}" for i in range(2)]
    monitor = CustomPluginMonitor(load(write_monitor(tmp_path, [
        {"type": "temporary", "reason": "Hung", "path": str(PLUGINS / "forks-child-then-hangs.sh"),
         "args": [str(f)]} for f in pgid_files])))

    async def cancel_when_started() -> None:
        task = asyncio.create_task(monitor.observe(T0))
        await asyncio.to_thread(wait_until, lambda: all(f.exists() and f.read_text() for f in pgid_files),
                                timeout=5.0, what="both plugins to start")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_when_started())

    for f in pgid_files:
        assert_group_gone(f)


# --- the example shipped in agent/defaults/plugins -------------------------------------------------------

SHIPPED = Path(__file__).resolve().parents[4] / "agent" / "defaults" / "plugins" / "reboot-required-monitor.json"


@pytest.mark.parametrize(
    ("marker", "packages", "expected"),
    [
        ("run/reboot-required", "linux-image-6.8\nlibc6\n",
         ConditionReport("RebootRequired", Status.TRUE, "RebootRequired",
                         "a reboot is required by: linux-image-6.8 libc6")),
        ("run/reboot-required", None,
         ConditionReport("RebootRequired", Status.TRUE, "RebootRequired", "a reboot is required")),
        (None, None, ConditionReport("RebootRequired", Status.FALSE, "NoRebootRequired",
                                     "no installed update waits for a reboot")),
    ],
    ids=["marker-with-packages", "marker-alone", "no-marker"],
)
def test_the_shipped_reboot_required_plugin_reports_the_marker(tmp_path, marker, packages, expected):
    (tmp_path / "run").mkdir()
    if marker:
        (tmp_path / marker).write_text("*** System restart required ***\n")
    if packages:
        (tmp_path / f"{marker}.pkgs").write_text(packages)

    assert observe(shipped_monitor(tmp_path / "run" / "reboot-required")).conditions == (expected,)


def test_the_shipped_reboot_required_plugin_is_unknown_when_it_cannot_see_the_directory(tmp_path):
    report = observe(shipped_monitor(tmp_path / "no-such-dir" / "reboot-required")).conditions[0]

    assert (report.status, report.message) == (Status.UNKNOWN, f"cannot see {tmp_path / 'no-such-dir'}")


def shipped_monitor(marker: Path) -> CustomPluginMonitor:
    """The shipped file through the real loader, with its marker argument pointed at a test directory."""
    shipped = load(SHIPPED)
    assert shipped.rules[0].args == ("/var/run/reboot-required",)
    rules = tuple(dataclasses.replace(r, args=(str(marker),)) for r in shipped.rules)
    return CustomPluginMonitor(dataclasses.replace(shipped, rules=rules))


@pytest.mark.parametrize(("skip", "expected"), [
    (False, (ConditionReport("DiskProblem", Status.FALSE, "DiskIsHealthy", "all disks are healthy"),)),
    (True, ()),
], ids=["initial-status", "skip-initial-status"])
def test_skip_initial_status_decides_whether_the_declared_defaults_are_offered(skip: bool, expected: tuple) -> None:
    base = config(rule("a"))
    monitor = CustomPluginMonitor(dataclasses.replace(
        base, plugin_config=dataclasses.replace(base.plugin_config, skip_initial_status=skip)), runner=FakeRunner())

    assert monitor.initial_conditions() == expected
