"""`nodemedic-agent check` and `validate` on fixture host roots: report, exit codes, configuration errors."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import gc
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from agent import cli
from agent.checks import BUILTIN
from agent.model import CheckTiming, ConditionReport, EventReport, Observation, Status
from agent.reporting.condition_metrics import ConditionMetrics
from agent.reporting.conditions import ConditionBook

KERNEL_MONITOR = Path(cli.__file__).with_name("defaults") / "kernel-monitor.json"
OTHERS = tuple(name for name in BUILTIN if name != "cpu")  # every built-in check but cpu


def fixture_host(tmp_path: Path, *, load1: float, kmsg: str = "") -> Path:
    root = tmp_path / "host"
    for d in ("proc/pressure", "sys/devices/system/cpu", "dev"):
        (root / d).mkdir(parents=True)
    boot = int(time.time()) - 3600
    (root / "proc" / "stat").write_text(f"cpu  1 2 3 4\nbtime {boot}\n")
    (root / "proc" / "loadavg").write_text(f"{load1} 0.5 0.5 1/100 4242\n")
    (root / "proc" / "pressure" / "cpu").write_text(
        "some avg10=1.00 avg60=2.00 avg300=3.00 total=100\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
    (root / "sys" / "devices" / "system" / "cpu" / "online").write_text("0-3\n")
    usec = int((time.time() - boot) * 1e6)
    (root / "dev" / "kmsg").write_text("".join(f"3,{i},{usec},-;{line}\n" for i, line in enumerate(kmsg.splitlines())))
    return root


def config(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "agent.yaml"
    disabled = "\n".join(f"  {c}: {{enabled: false}}" for c in OTHERS)
    path.write_text(f"apiVersion: nodemedic.io/v1alpha1\nkind: AgentConfig\nchecks:\n{disabled}\n"
                    f"  cpu: {{window: 5m}}\n{extra}systemLogMonitors: [{KERNEL_MONITOR}]\n")
    return path


def run_check(capsys: pytest.CaptureFixture[str], root: Path, cfg: Path) -> tuple[int, dict]:
    code = cli.main(["check", "--config", str(cfg), "--host-root", str(root), "--json"])
    return code, json.loads(capsys.readouterr().out)


def by_type(report: dict) -> dict[str, dict]:
    return {r["type"]: r for r in report["conditions"]}


def test_a_healthy_host_exits_0_and_every_configured_type_is_reported(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report = run_check(capsys, fixture_host(tmp_path, load1=0.4), config(tmp_path))
    rows = by_type(report)
    assert code == 0 and report["healthy"] is True
    # cpu waits for a 5m window when running; a one-shot check judges the current reading instead
    assert rows["CPUPressure"]["status"] == "False"
    assert "below threshold now" in rows["CPUPressure"]["message"]
    # a log monitor with no match reports its config's defaults
    assert rows["KernelDeadlock"] == {"check": "kernel-monitor", "type": "KernelDeadlock", "status": "False",
                                      "reason": "KernelHasNoDeadlock", "message": "kernel has no deadlock"}


def test_an_overloaded_cpu_and_a_hung_task_in_the_kernel_log_exit_1(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = fixture_host(tmp_path, load1=40.0, kmsg="INFO: task jbd2/sda1-8:412 blocked for more than 120 seconds.")
    code, report = run_check(capsys, root, config(tmp_path))
    rows = by_type(report)
    assert code == 1 and report["healthy"] is False
    assert rows["CPUPressure"]["status"] == "True" and rows["CPUPressure"]["reason"] == "CPUOverloaded"
    assert rows["KernelDeadlock"]["status"] == "True" and rows["KernelDeadlock"]["reason"] == "TaskHung"
    assert "TaskHung" in {e["reason"] for e in report["events"]}


def test_unreadable_sensors_are_unknown_not_a_crash(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = fixture_host(tmp_path, load1=0.4)
    (root / "proc" / "loadavg").write_text("garbage\n")
    code, report = run_check(capsys, root, config(tmp_path))
    assert code == 0  # Unknown is not a problem condition
    assert by_type(report)["CPUPressure"]["status"] == "Unknown"


def test_the_table_names_each_condition(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["check", "--config", str(config(tmp_path)), "--host-root", str(fixture_host(tmp_path, load1=1))])
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert out[0].split() == ["CHECK", "CONDITION", "STATUS", "REASON", "MESSAGE"]
    assert {line.split()[1] for line in out[1:]} == {"CPUPressure", "KernelDeadlock", "XfsShutdown",
                                                     "CperHardwareErrorFatal"}


def test_a_bad_config_exits_2_naming_file_line_and_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = config(tmp_path, extra="heartbeat: soon\n")
    for argv in (["check", "--config", str(cfg)], ["validate", "--config", str(cfg)]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert f"{cfg}:" in err and "heartbeat" in err, err


def test_validate_lists_the_checks_of_a_good_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["validate", "--config", str(config(tmp_path))]) == 0
    assert "2 checks: cpu, kernel-monitor; repair: on" in capsys.readouterr().out


def test_validate_warns_about_keys_npd_would_ignore(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    monitor = json.loads(KERNEL_MONITOR.read_text())
    monitor["bufferSise"] = 20  # a typo NPD would ignore without a word
    typo = tmp_path / "typo-monitor.json"
    typo.write_text(json.dumps(monitor))
    cfg = tmp_path / "agent.yaml"
    disabled = "\n".join(f"  {c}: {{enabled: false}}" for c in (*OTHERS, "cpu"))
    cfg.write_text(f"checks:\n{disabled}\nsystemLogMonitors: [{typo}]\n")
    assert cli.main(["validate", "--config", str(cfg)]) == 0
    out = capsys.readouterr()
    assert f"warning: {typo}: bufferSise: unknown field, ignored" in out.err
    assert "1 checks: kernel-monitor" in out.out


@pytest.mark.parametrize("kubeconfig", ["missing", "no-context"])
def test_run_with_an_unusable_kubeconfig_names_the_file_and_exits_2(
        kubeconfig: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / f"{kubeconfig}.kubeconfig"
    if kubeconfig == "no-context":
        path.write_text("apiVersion: v1\nkind: Config\nclusters: []\n")
    root = fixture_host(tmp_path, load1=0.1)
    code = cli.main(["run", "--node-name", "n1", "--kubeconfig", str(path), "--config", str(config(tmp_path)),
                     "--host-root", str(root), "--listen", "", "--state-dir", str(tmp_path / "state")])
    assert code == 2
    err = capsys.readouterr().err
    assert f"nodemedic-agent: {path}: " in err and "Traceback" not in err, err


def test_check_reports_a_root_that_was_remounted_read_only_before_the_agent_started(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = fixture_host(tmp_path, load1=0.1, kmsg="EXT4-fs (sda1): Remounting filesystem read-only")
    (root / "proc" / "mounts").write_text("/dev/sda1 / ext4 ro,relatime 0 0\n")
    cfg = tmp_path / "fs.yaml"
    cfg.write_text("checks:\n" + "".join(f"  {c}: {{enabled: false}}\n" for c in ("cpu", *OTHERS) if c != "filesystem")
                   + "systemLogMonitors: []\n")
    assert cli.main(["check", "--json", "--config", str(cfg), "--host-root", str(root)]) == 1
    rows = {r["type"]: r for r in json.loads(capsys.readouterr().out)["conditions"]}
    assert (rows["ReadonlyFilesystem"]["status"], rows["ReadonlyFilesystem"]["message"]) == (
        "True", "/ (/dev/sda1, ext4) is read-only; the kernel logged: EXT4-fs (sda1): Remounting filesystem read-only")


def test_a_monitor_with_metrics_reporting_off_stays_out_of_the_metrics(tmp_path: Path) -> None:
    quiet = tmp_path / "quiet-monitor.json"
    quiet.write_text(json.dumps({
        "plugin": "kmsg", "source": "quiet", "metricsReporting": False,
        "conditions": [{"type": "QuietProblem", "reason": "Fine"}],
        "rules": [{"type": "permanent", "condition": "QuietProblem", "reason": "Bad", "pattern": "bad"}]}))
    checks = cli.build_checks(cli.load_config(None, registry={}), cli.HostRoot(tmp_path))
    checks += cli.build_checks(dataclasses.replace(cli.load_config(None, registry={}), system_log_monitors=(quiet,)),
                               cli.HostRoot(tmp_path))
    registry = CollectorRegistry()
    metrics = ConditionMetrics(registry, unmetered=cli.unmetered(checks))
    book = ConditionBook({c.name: c.condition_types for c in checks})
    at = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    for check, kind in (("quiet", "QuietProblem"), ("kernel-monitor", "KernelDeadlock")):
        obs = Observation(check, at, (ConditionReport(kind, Status.TRUE, "Bad"),), (EventReport("Boom", "m"),))
        book.apply(obs)
        metrics.count(obs, set())
    metrics.show(book)

    assert cli.unmetered(checks) == {"quiet": ("QuietProblem",)}
    sample = registry.get_sample_value
    assert sample("nodemedic_agent_problems_total", {"type": "QuietProblem", "reason": "Bad"}) is None
    assert sample("nodemedic_agent_condition_status", {"type": "QuietProblem", "status": "True"}) is None
    assert sample("nodemedic_agent_problems_total", {"type": "KernelDeadlock", "reason": "Bad"}) == 1
    assert sample("nodemedic_agent_problems_total", {"type": "", "reason": "Boom"}) == 1


def test_a_config_that_names_no_log_monitors_runs_the_shipped_kernel_gpu_and_journal_monitors(tmp_path: Path) -> None:
    checks = cli.build_checks(cli.load_config(None, registry={}), cli.HostRoot(tmp_path))

    assert [c.name for c in checks] == ["kernel-monitor", "gpu-monitor", "systemd-journal-monitor",
                                        "kubelet-journal-monitor", "containerd-journal-monitor",
                                        "smartd-journal-monitor", "abrt-journal-monitor"]


def test_on_a_host_without_a_journal_the_journal_monitors_start_nothing_and_report_nothing(tmp_path: Path) -> None:
    checks = cli.build_checks(cli.load_config(None, registry={}), cli.HostRoot(tmp_path))
    journal = [c for c in checks if isinstance(c, cli.LogMonitor) and c.name.endswith("journal-monitor")]
    assert all(c.absent and c.initial_conditions() == () for c in journal)  # before any look: no defaults to write
    observations = asyncio.run(cli._check_once(journal))

    assert [(o.conditions, o.events, o.error) for o in observations] == [((), (), "")] * 5
    assert all(c.absent and c.input_fd() is None and c.initial_conditions() == () for c in journal)
    assert {c.timing.interval for c in journal} == {dt.timedelta(minutes=5)}  # looked for again at the idle pace


class _HoldsASession:
    """A check that keeps something open between observations, like the kubelet probe's HTTP session."""

    name = "holder"
    condition_types = ("Held",)
    timing = CheckTiming()

    def __init__(self) -> None:
        self.closed = 0

    async def observe(self, now: dt.datetime) -> Observation:
        return Observation(self.name, now, conditions=(ConditionReport("Held", Status.FALSE, "Fine"),))

    async def close(self) -> None:
        self.closed += 1


def test_a_one_shot_check_releases_what_its_checks_hold() -> None:
    holder = _HoldsASession()

    (observation,) = asyncio.run(cli._check_once([holder]))

    assert observation.conditions[0].status is Status.FALSE
    assert holder.closed == 1


@pytest.mark.parametrize("cmd", ["validate", "check", "run"])
def test_a_pattern_re2_refuses_exits_2_naming_file_and_field_without_a_traceback(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], cmd: str) -> None:
    # Issue 25: patterns run on RE2 now; what RE2 cannot run (a lookahead, a backreference) is refused at start.
    monitor = json.loads(KERNEL_MONITOR.read_text())
    monitor["rules"][1]["pattern"] = "task (\\w+) blocked(?= for)"
    bad = tmp_path / "bad-monitor.json"
    bad.write_text(json.dumps(monitor))
    cfg = tmp_path / "agent.yaml"
    disabled = "\n".join(f"  {c}: {{enabled: false}}" for c in (*OTHERS, "cpu"))
    cfg.write_text(f"checks:\n{disabled}\nsystemLogMonitors: [{bad}]\n")
    argv = [cmd, "--config", str(cfg)] + (["--node", "n1", "--kubeconfig", str(tmp_path / "none")] if cmd == "run"
                                          else [])
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert f"{bad}: rules[1].pattern: invalid regular expression: invalid perl operator: (?=" in err, err
    assert "Traceback" not in err


def test_a_custom_plugin_monitor_with_metrics_reporting_off_stays_out_of_the_metrics_too(tmp_path: Path) -> None:
    shipped = Path(cli.__file__).with_name("defaults") / "plugins"
    monitor = json.loads((shipped / "reboot-required-monitor.json").read_text())
    monitor["metricsReporting"] = False
    monitor["rules"][0]["path"] = str(shipped / "check_reboot_required.sh")
    (tmp_path / "quiet-plugin.json").write_text(json.dumps(monitor))
    cfg = dataclasses.replace(cli.load_config(None, registry={}), system_log_monitors=(),
                              custom_plugin_monitors=(tmp_path / "quiet-plugin.json",))

    checks = cli.build_checks(cfg, cli.HostRoot(tmp_path))

    assert cli.unmetered(checks) == {"reboot-required-monitor": ("RebootRequired",)}
    assert [d.type for c in checks if isinstance(c, cli.NpdMonitor) for d in c.initial_conditions()] == [
        "RebootRequired"]


def test_the_custom_plugin_loader_and_runner_are_imported_only_for_a_config_that_names_a_plugin() -> None:
    probe = ("import sys; from pathlib import Path; from agent import cli; "
             "cli.build_checks(cli.load_config(None, registry=cli.BUILTIN), cli.HostRoot(Path('/nonexistent'))); "
             "print(sorted(m for m in sys.modules if 'plugin' in m))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                          cwd=Path(cli.__file__).parents[1])
    assert done.stdout.strip() == "[]"


def test_once_started_the_agent_moves_what_startup_left_to_the_permanent_generation() -> None:
    """A full collection then walks only what the agent allocated since, not the modules and config it lives with."""
    async def settle() -> int:
        task = asyncio.create_task(cli._settle_heap(first=0, every=3600))
        try:
            while gc.get_freeze_count() == 0 and not task.done():
                await asyncio.sleep(0)
            return gc.get_freeze_count()
        finally:
            task.cancel()

    try:
        assert asyncio.run(settle()) > 0
    finally:
        gc.unfreeze()  # the rest of the test session collects as before


def test_with_repair_on_the_agent_owns_the_repair_answer_and_no_check_may_report_it(tmp_path: Path) -> None:
    shipped = Path(cli.__file__).with_name("defaults") / "plugins"
    monitor = json.loads((shipped / "reboot-required-monitor.json").read_text())
    monitor["conditions"][0]["type"] = monitor["rules"][0]["condition"] = "NodemedicRepair"
    monitor["rules"][0]["path"] = str(shipped / "check_reboot_required.sh")
    (tmp_path / "clash.json").write_text(json.dumps(monitor))
    cfg = dataclasses.replace(cli.load_config(None, registry={}), system_log_monitors=(),
                              custom_plugin_monitors=(tmp_path / "clash.json",))
    assert cli.repair_answer(cfg) == {"repair": ("NodemedicRepair",)}

    with pytest.raises(cli.ConfigError) as err:
        cli.build_checks(cfg, cli.HostRoot(tmp_path))
    assert err.value.errors == ["condition type NodemedicRepair is the agent's repair answer; "
                                "'reboot-required-monitor' may not report it"]

    off = dataclasses.replace(cfg, repair=dataclasses.replace(cfg.repair, enabled=False))
    assert cli.repair_answer(off) == {}
    assert [c.name for c in cli.build_checks(off, cli.HostRoot(tmp_path))] == ["reboot-required-monitor"]


def test_run_watches_its_node_and_answers_a_repair_ask_through_the_reporter(tmp_path: Path) -> None:
    """The wiring of `run`: the Node watch hands the ask to the worker, whose answers the reporter writes."""
    from aiohttp import web  # noqa: PLC0415 - the fake API server of this test only

    from nodemedic_common.repair_contract import format_time  # noqa: PLC0415

    ran = tmp_path / "ran"
    restart = tmp_path / "restart.sh"
    restart.write_text(f"#!/bin/sh\necho \"$@\" > {ran}\n")
    restart.chmod(0o755)
    ask = json.dumps({"id": "r-1", "action": "restart", "service": "kubelet",
                      "requested": format_time(dt.datetime.now(dt.UTC))})
    node = {"metadata": {"name": "n1", "resourceVersion": "5", "annotations": {"nodemedic.io/repair": ask}},
            "status": {"conditions": []}}
    written: list[dict[str, str]] = []
    events: list[str] = []
    closing = asyncio.Event()

    async def handle(request: web.Request) -> web.StreamResponse:
        if request.method == "PATCH":
            written.extend(c for c in (await request.json())["status"]["conditions"] if c["type"] == "NodemedicRepair")
            return web.json_response(node)
        if request.method == "POST":
            events.append((await request.json())["reason"])
            return web.json_response({})
        if request.path == "/api/v1/nodes/n1":
            return web.json_response(node)
        if request.query.get("watch") != "true":
            return web.json_response({"metadata": {"resourceVersion": "5"}, "items": [node]})
        resp = web.StreamResponse()
        await resp.prepare(request)
        await closing.wait()  # the watch stays open until the server stops
        return resp

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    disabled = "\n".join(f"  {c}: {{enabled: false}}" for c in BUILTIN)
    cfg = tmp_path / "agent.yaml"
    cfg.write_text(f"checks:\n{disabled}\nsystemLogMonitors: []\nrepair:\n  hostCommandPrefix: []\n"
                   f"  commands: {{restart: {{kubelet: [{restart}, now]}}}}\n")

    async def main() -> int:
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        (tmp_path / "kubeconfig").write_text(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n"
            f"clusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n"
            "users: [{name: u, user: {token: t}}]\n")
        args = cli.argparse.Namespace(node_name="n1", kubeconfig=str(tmp_path / "kubeconfig"), config=str(cfg),
                                      host_root=str(tmp_path), state_dir=str(tmp_path / "state"), listen="")
        agent = asyncio.create_task(cli._run(args, cli.logging.getLogger("test.cli")))
        try:
            deadline = time.monotonic() + 20
            while not any(c["reason"] == "Done" for c in written) or len(events) < 2:
                assert time.monotonic() < deadline, f"no Done answer; written: {written}"
                assert not agent.done(), agent
                await asyncio.sleep(0.02)
            os.kill(os.getpid(), signal.SIGTERM)  # as the kubelet stops the agent
            return await asyncio.wait_for(agent, 10)
        finally:
            closing.set()
            await runner.cleanup()

    assert asyncio.run(main()) == 0
    assert ran.read_text() == "now\n"
    assert [(c["status"], c["reason"]) for c in written][:1] == [("True", "Acting")]
    assert written[-1]["message"].startswith("request r-1: restarted kubelet in ")
    assert events == ["NodemedicRepairRestart", "NodemedicRepairRestart"]


def test_the_agent_process_imports_no_aiohttp_and_no_kubernetes_package() -> None:
    """Both cost memory on every node (aiohttp and its imports 7.4 MiB of the pod's 28): the agent talks to the API
    server with nodemedic_common's own HTTP/1.1 (http1_client.py)."""
    probe = ("import sys, agent.cli, agent.pipeline, agent.reporting.reporter, agent.reporting.pod_watch, "
             "agent.reporting.node_watch\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('aiohttp', 'kubernetes', 'yarl')))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("level", ["error", "LOUD", ""])
def test_run_refuses_a_log_level_that_is_not_one_with_exit_2_naming_the_choices(
        level: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["run", "--node-name", "n1", "--log-level", level])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "argument --log-level: invalid choice" in err and "'DEBUG', 'INFO', 'WARNING', 'ERROR'" in err, err
    assert "Traceback" not in err
