"""Kubelet health against a real local aiohttp server, and restart counting from a fixture /proc."""

from __future__ import annotations

import asyncio
import datetime as dt
import shutil
import ssl
from collections.abc import Sequence
from pathlib import Path

import pytest
from aiohttp import web

from agent.bounds import field_problems
from agent.checks.kubelet import FREQUENT_RESTART, UNHEALTHY, Config, KubeletCheck
from agent.host import HostRoot
from agent.model import ConditionReport, Observation, Status
from agent.sensors.idle import IDLE_INTERVAL
from agent.services.restarts import RestartConfig

NOW = dt.datetime(2024, 5, 1, 12, 0, 0, tzinfo=dt.UTC)
MINUTE = dt.timedelta(minutes=1)
BOOT = 1714560000  # btime: 2024-05-01T10:40:00Z
TICKS = 100
FAST = dt.timedelta(milliseconds=300)  # request timeout for the hanging server: the test waits this long, no more


class FakeKubelet:
    """A /healthz that answers with `status`, or never answers when `status` is None."""

    def __init__(self) -> None:
        self.status: int | None = 200
        self.release = asyncio.Event()  # set before the server stops: aiohttp waits for pending handlers
        self.peers: list[object] = []  # the client address of each request: one per connection

    async def healthz(self, request: web.Request) -> web.Response:
        self.peers.append(request.transport.get_extra_info("peername") if request.transport else None)
        if self.status is None:
            await self.release.wait()
            return web.Response(status=503)
        return web.Response(status=self.status, text="ok" if self.status == 200 else "[-]syncloop failed")


def probe_sequence(kubelet: FakeKubelet, statuses: Sequence[int | None], config: Config | None = None,
                   root: Path | None = None, intervals: list[dt.timedelta] | None = None) -> list[ConditionReport]:
    """Serve `statuses` one per observation from a real server on 127.0.0.1:0; the KubeletUnhealthy reports (and
    the check's interval after each observation, into `intervals`)."""

    async def main() -> list[ConditionReport]:
        app = web.Application()
        app.router.add_get("/healthz", kubelet.healthz)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        host, port = runner.addresses[0][:2]
        base = config or Config(request_timeout=FAST)
        check = KubeletCheck(Config(healthz_url=f"http://{host}:{port}/healthz", request_timeout=base.request_timeout,
                                    failure_threshold=base.failure_threshold), HostRoot(root or Path("/nonexistent")))
        reports = []
        try:
            for i, status in enumerate(statuses):
                kubelet.status = status
                observation = await check.observe(NOW + i * MINUTE)
                assert [c.type for c in observation.conditions] == list(check.condition_types)
                reports.append(next(c for c in observation.conditions if c.type == UNHEALTHY))
                if intervals is not None:
                    intervals.append(check.timing.interval)
        finally:
            await check.close()
            kubelet.release.set()
            await runner.cleanup()
        return reports

    return asyncio.run(main())


def test_a_kubelet_answering_200_is_healthy() -> None:
    (report,) = probe_sequence(FakeKubelet(), [200])
    assert (report.status, report.reason) == (Status.FALSE, "KubeletIsHealthy")
    assert report.message.endswith("/healthz answers 200")


@pytest.mark.parametrize(("statuses", "expected"), [
    ([500, 500, 500], [Status.UNKNOWN, Status.UNKNOWN, Status.TRUE]),
    ([200, 500, 500, 500], [Status.FALSE, Status.FALSE, Status.FALSE, Status.TRUE]),
    ([200, 500, 500, 200, 500, 500], [Status.FALSE] * 6),
    ([500, 500, 500, 200], [Status.UNKNOWN, Status.UNKNOWN, Status.TRUE, Status.FALSE]),
    ([200, None, None, None], [Status.FALSE, Status.FALSE, Status.FALSE, Status.TRUE]),
], ids=["three-failures-at-start", "three-failures-after-healthy", "a-success-resets-the-streak",
        "recovers-on-first-success", "hanging-counts-as-failure"])
def test_kubelet_unhealthy_needs_three_failed_probes_in_a_row(
        statuses: list[int | None], expected: list[Status]) -> None:
    reports = probe_sequence(FakeKubelet(), statuses)
    assert [r.status for r in reports] == expected


def test_the_probe_runs_on_the_agents_30_s_grid_while_settled_and_every_5_s_while_a_failure_is_confirmed() -> None:
    intervals: list[dt.timedelta] = []
    reports = probe_sequence(FakeKubelet(), [200, 500, 500, 500, 500, 200, 500, 200], intervals=intervals)
    assert [r.status for r in reports] == [Status.FALSE] * 3 + [Status.TRUE] * 2 + [Status.FALSE] * 3
    assert [i.total_seconds() for i in intervals] == [30, 5, 5, 30, 30, 30, 5, 30]
    assert Config().timing.interval == dt.timedelta(seconds=30) and Config().recheck_interval == dt.timedelta(seconds=5)


def test_one_keep_alive_connection_serves_every_probe() -> None:
    kubelet = FakeKubelet()
    reports = probe_sequence(kubelet, [200, 500, 200, 200])
    assert [r.status for r in reports] == [Status.FALSE, Status.FALSE, Status.FALSE, Status.FALSE]
    assert len(kubelet.peers) == 4 and len(set(kubelet.peers)) == 1


def test_close_releases_the_session_and_a_later_probe_opens_a_new_one() -> None:
    kubelet = FakeKubelet()

    async def main() -> list[Status]:
        app = web.Application()
        app.router.add_get("/healthz", kubelet.healthz)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        host, port = runner.addresses[0][:2]
        check = KubeletCheck(Config(healthz_url=f"http://{host}:{port}/healthz"), HostRoot(Path("/nonexistent")))
        try:
            statuses = [(await check.observe(NOW)).conditions[0].status]
            await check.close()
            statuses.append((await check.observe(NOW + MINUTE)).conditions[0].status)
            await check.close()
            await check.close()  # twice is harmless
        finally:
            await runner.cleanup()
        return statuses

    assert asyncio.run(main()) == [Status.FALSE, Status.FALSE]
    assert len(set(kubelet.peers)) == 2


def test_the_failure_message_says_what_failed_and_how_far_the_streak_is() -> None:
    reports = probe_sequence(FakeKubelet(), [500, None, 503])
    assert reports[0].message.endswith("/healthz: HTTP 500 '[-]syncloop failed' (1 failure(s) in a row, threshold 3)")
    assert reports[0].reason == "KubeletHealthUnknown"
    assert "no answer within 300ms (2 failure(s) in a row" in reports[1].message
    assert (reports[2].status, reports[2].reason) == (Status.TRUE, "KubeletUnhealthy")


def test_a_kubelet_that_stays_down_keeps_one_message_so_the_node_is_not_rewritten_every_probe() -> None:
    reports = probe_sequence(FakeKubelet(), [500] * 6)
    assert [r.status for r in reports[2:]] == [Status.TRUE] * 4
    assert {r.message for r in reports[2:]} == {reports[2].message}
    assert reports[2].message.endswith("/healthz: HTTP 500 '[-]syncloop failed' (3 or more failures in a row)")


def test_a_refused_connection_is_a_failed_probe() -> None:
    check = KubeletCheck(Config(healthz_url="http://127.0.0.1:9/healthz", failure_threshold=1), HostRoot(Path("/x")))

    async def observe() -> Observation:
        try:
            return await check.observe(NOW)
        finally:
            await check.close()

    report = asyncio.run(observe()).conditions[0]
    assert (report.status, report.type) == (Status.TRUE, UNHEALTHY)
    assert "ConnectionRefusedError: [Errno 111] Connect call failed" in report.message


def write_process(root: Path, pid: int, name: str, start_ticks: int, ppid: int = 1, state: str = "S") -> None:
    proc = root / "proc" / str(pid)
    proc.mkdir(parents=True, exist_ok=True)
    (proc / "comm").write_text(f"{name}\n")
    # fields 3.. of /proc/<pid>/stat; field 3 the state, 4 the ppid, 22 the start time in clock ticks after boot
    rest = [state, str(ppid)] + ["0"] * 17 + [str(start_ticks)] + ["0"] * 30
    (proc / "stat").write_text(f"{pid} ({name}) {' '.join(rest)}\n")


def ticks_at(when: dt.datetime) -> int:
    return int((when.timestamp() - BOOT) * TICKS)


@pytest.fixture
def proc_root(tmp_path: Path) -> Path:
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/stat").write_text(f"cpu  1 2 3 4\nbtime {BOOT}\nprocesses 100\n")
    write_process(tmp_path, 1, "systemd", 1, ppid=0)
    write_process(tmp_path, 700, "kubelet", ticks_at(NOW - 60 * MINUTE))
    return tmp_path


def restart_report(check: KubeletCheck, now: dt.datetime) -> ConditionReport:
    async def observe() -> Observation:
        try:
            return await check.observe(now)
        finally:
            await check.close()  # its probe session belongs to this event loop, which ends here

    observation = asyncio.run(observe())
    return next(c for c in observation.conditions if c.type == FREQUENT_RESTART)


def kubelet_check(root: Path, **restarts: object) -> KubeletCheck:
    # no process names given: the check's own ("kubelet",) apply
    config = Config(healthz_url="http://127.0.0.1:9/healthz", restarts=RestartConfig(**restarts))  # type: ignore[arg-type]
    return KubeletCheck(config, HostRoot(root), clock_ticks=TICKS)


def stop_kubelet(root: Path) -> None:
    for proc in (root / "proc").iterdir():
        if proc.name.isdigit() and (proc / "comm").read_text().strip() == "kubelet":
            shutil.rmtree(proc)


def restart_kubelet(root: Path, pid: int, when: dt.datetime) -> None:
    stop_kubelet(root)
    write_process(root, pid, "kubelet", ticks_at(when))


def test_five_kubelet_restarts_within_twenty_minutes_are_frequent_and_age_out(proc_root: Path) -> None:
    check = kubelet_check(proc_root)
    report = restart_report(check, NOW)  # the start an hour ago is a baseline, not a restart
    assert (report.status, report.message) == (Status.FALSE, "kubelet restarted 0 time(s) in the last 20m0s (limit 5)")
    for i in range(1, 6):
        restart_kubelet(proc_root, 700 + i, NOW + i * MINUTE)
        report = restart_report(check, NOW + i * MINUTE + dt.timedelta(seconds=30))
    assert (report.status, report.reason) == (Status.TRUE, "FrequentKubeletRestart")
    assert report.message == "kubelet restarted 5 time(s) in the last 20m0s (limit 5)"
    assert restart_report(check, NOW + 21 * MINUTE).status is Status.TRUE
    report = restart_report(check, NOW + 21 * MINUTE + dt.timedelta(seconds=30))
    assert (report.status, report.reason) == (Status.FALSE, "NoFrequentKubeletRestart")


def test_the_same_process_seen_again_is_not_a_restart(proc_root: Path) -> None:
    check = kubelet_check(proc_root, max_restarts=1)
    for minute in range(3):
        assert restart_report(check, NOW + minute * MINUTE).status is Status.FALSE


def test_a_kubelet_that_is_gone_keeps_its_history_and_says_it_is_not_running(proc_root: Path) -> None:
    check = kubelet_check(proc_root, max_restarts=1)
    restart_report(check, NOW)
    restart_kubelet(proc_root, 701, NOW + MINUTE)
    assert restart_report(check, NOW + MINUTE).status is Status.TRUE
    stop_kubelet(proc_root)
    report = restart_report(check, NOW + 2 * MINUTE)
    assert report.status is Status.TRUE
    assert report.message.endswith("; kubelet is not running now")


def test_the_service_started_by_init_is_preferred_over_a_nested_one(proc_root: Path) -> None:
    check = kubelet_check(proc_root, max_restarts=1)
    write_process(proc_root, 900, "kubelet", ticks_at(NOW - 90 * MINUTE), ppid=850)  # e.g. inside a kind node
    restart_report(check, NOW)
    restart_kubelet(proc_root, 701, NOW + MINUTE)  # removes both; the nested one comes back unchanged
    write_process(proc_root, 900, "kubelet", ticks_at(NOW - 90 * MINUTE), ppid=850)
    assert restart_report(check, NOW + 2 * MINUTE).status is Status.TRUE


def test_a_kubelet_never_seen_is_looked_for_again_after_the_idle_interval_not_on_every_sample(proc_root: Path) -> None:
    stop_kubelet(proc_root)
    check = kubelet_check(proc_root)
    assert "no process named kubelet" in restart_report(check, NOW).message
    write_process(proc_root, 701, "kubelet", ticks_at(NOW + dt.timedelta(seconds=5)))

    within = restart_report(check, NOW + IDLE_INTERVAL - dt.timedelta(seconds=10))  # the last scan's answer stands
    after = restart_report(check, NOW + IDLE_INTERVAL)

    assert (within.status, within.reason) == (Status.UNKNOWN, "RestartsUnknown")
    assert "no process named kubelet" in within.message
    assert (after.status, after.message) == (Status.FALSE, "kubelet restarted 0 time(s) in the last 20m0s (limit 5)")


def test_a_kubelet_seen_before_and_gone_is_looked_for_on_every_sample(proc_root: Path) -> None:
    check = kubelet_check(proc_root, max_restarts=1)
    restart_report(check, NOW)
    stop_kubelet(proc_root)
    assert restart_report(check, NOW + dt.timedelta(seconds=10)).message.endswith("; kubelet is not running now")
    write_process(proc_root, 702, "kubelet", ticks_at(NOW + dt.timedelta(seconds=15)))

    report = restart_report(check, NOW + dt.timedelta(seconds=20))

    assert (report.status, report.reason) == (Status.TRUE, "FrequentKubeletRestart")


@pytest.mark.parametrize(("breakage", "fragment"), [
    ("no-kubelet", "no process named kubelet under"),
    ("no-btime", "/proc/stat has no btime line"),
    ("stat-garbage", "/proc/700/stat is malformed"),
    ("no-proc", "No such file or directory"),
], ids=["kubelet-not-found", "proc-stat-without-btime", "garbage-process-stat", "no-proc-mounted"])
def test_unusable_proc_data_makes_the_restart_condition_unknown(proc_root: Path, breakage: str, fragment: str) -> None:
    if breakage == "no-kubelet":
        write_process(proc_root, 700, "kubelet-helper", ticks_at(NOW - 60 * MINUTE))
    elif breakage == "no-btime":
        (proc_root / "proc/stat").write_text("cpu 1 2 3\n")
    elif breakage == "stat-garbage":
        (proc_root / "proc/700/stat").write_text("700 (kubelet) S 1\n")
    root = proc_root / "elsewhere" if breakage == "no-proc" else proc_root
    report = restart_report(kubelet_check(root), NOW)
    assert (report.status, report.reason) == (Status.UNKNOWN, "RestartsUnknown")
    assert fragment in report.message


@pytest.mark.parametrize(("config", "errors"), [
    (Config(), []),
    (Config(healthz_url="127.0.0.1:10248/healthz"), ["healthzUrl: must be an http:// or https:// URL with a host, got "
                                                     "'127.0.0.1:10248/healthz'"]),
    (Config(healthz_url="unix:///run/kubelet.sock"), ["healthzUrl: must be an http:// or https:// URL with a host, got "
                                                      "'unix:///run/kubelet.sock'"]),
    (Config(request_timeout=dt.timedelta(0)), ['requestTimeout: must be positive, got 0s']),
    (Config(request_timeout=dt.timedelta(seconds=15)), ['requestTimeout: must be shorter than timeout (15s), got 15s']),
    (Config(failure_threshold=0), ['failureThreshold: must be at least 1, got 0']),
    (Config(restarts=RestartConfig(max_restarts=3)), []),
], ids=["defaults", "no-scheme", "unix-scheme", "zero-timeout", "timeout-not-below-check-timeout", "zero-threshold",
        "restarts-without-names-uses-the-checks-names"])
def test_validate_reports_each_bad_field(config: Config, errors: list[str]) -> None:
    assert problems(config) == errors


def test_an_https_probe_verifies_against_the_system_ca_store_and_plain_http_uses_no_tls() -> None:
    https = KubeletCheck(Config(healthz_url="https://127.0.0.1:10250/healthz"), HostRoot(Path("/x")))
    context = https.healthz.tls()
    assert isinstance(context, ssl.SSLContext) and context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname
    assert context.cert_store_stats() == ssl.create_default_context().cert_store_stats()
    assert https.healthz.tls() is context, "built once"
    assert KubeletCheck(Config(), HostRoot(Path("/x"))).healthz.tls() is None


def test_a_restart_is_counted_while_the_stopped_kubelet_is_still_an_unreaped_zombie(proc_root: Path) -> None:
    """A kubelet stopped by a process that has not reaped it yet stays in /proc as a zombie, with its name and its
    old start time: the new kubelet beside it is the restart."""
    check = kubelet_check(proc_root)
    restart_report(check, NOW)  # the baseline: the kubelet started an hour ago
    old = next(p for p in (proc_root / "proc").iterdir()
               if p.name.isdigit() and (p / "comm").read_text().strip() == "kubelet")
    stat = (old / "stat").read_text().split(" ")
    stat[2] = "Z"
    (old / "stat").write_text(" ".join(stat))
    write_process(proc_root, 901, "kubelet", ticks_at(NOW + MINUTE))

    report = restart_report(check, NOW + 2 * MINUTE)

    assert report.message.startswith("kubelet restarted 1 time(s)"), report.message


def problems(config: object) -> list[str]:
    return [str(problem) for problem in field_problems(config)]
