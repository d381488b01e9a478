"""The shipped journald monitors (agent/defaults/*-journal-monitor.json) on a real journal: each table's lines
are logged in order by the monitor's identifier, benign near-misses among them, and exactly the expected events
and conditions must come out."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from agent.checks.logmonitor import LogMonitor
from agent.host import HostRoot
from agent.model import ConditionReport, EventReport, Status
from agent.npd.logmonitor_config import DEFAULTS_DIR, load
from tests.real_journal import RealJournal
from tests.waiting import wait_until

# file -> (identifier, [(MESSAGE, event reason or None, condition reason or None)])
TABLES: dict[str, tuple[str, list[tuple[str, str | None, str | None]]]] = {
    "systemd-journal-monitor.json": ("systemd", [
        ("Failed to start kubelet.service - kubelet: The Kubernetes Node Agent.", "ServiceFailedToStart", None),
        ("Failed to start Docker Application Container Engine.", "ServiceFailedToStart", None),
        ("kubelet.service: Failed with result 'exit-code'.", "ServiceFailed", None),
        ("containerd.service: Failed with result 'oom-kill'.", "ServiceFailed", None),
        ("kubelet.service: Scheduled restart job, restart counter is at 4.", None, None),
        ("kubelet.service: Scheduled restart job, restart counter is at 5.", None, "ServiceRestartLooping"),
        ("containerd.service: Scheduled restart job, restart counter is at 12.", None, "ServiceRestartLooping"),
        # near-misses
        ("Started kubelet.service - kubelet: The Kubernetes Node Agent.", None, None),
        ("kubelet.service: Deactivated successfully.", None, None),
        ("Stopped kubelet.service - kubelet: The Kubernetes Node Agent.", None, None),
        ("kubelet.service: Consumed 1min 3.456s CPU time.", None, None),
    ]),
    "kubelet-journal-monitor.json": ("kubelet", [
        ('E0501 12:00:00.123456    1234 pod_workers.go:1298] "Error syncing pod, skipping" err="failed to '
         '\\"StartContainer\\" for \\"app\\" with RunContainerError: \\"failed to create containerd task: failed to '
         'create shim task: OCI runtime create failed: runc create failed: unable to start container process: '
         'error during container init: exec: \\\\\\"/app\\\\\\": permission denied: unknown\\"" pod="default/web-1"',
         "ContainerCreationFailed", None),
        ('E0501 12:00:01.000000    1234 remote_runtime.go:1] "ExecSync cmd from runtime service failed" '
         'err="rpc error: code = Unknown desc = failed to exec in container: failed to start exec: fork/exec '
         '/usr/bin/runc: resource temporarily unavailable"', "ForkFailed", None),
        ("runtime: failed to create new OS thread (have 8 already; errno=11)", "ThreadCreationFailed", None),
        ('E0501 12:00:02.000000    1234 kubelet.go:2408] "Skipping pod synchronization" err="PLEG is not healthy: '
         'pleg was last seen active 3m0.523s ago; threshold is 3m0s"', "PLEGNotHealthy", None),
        ('I0501 12:00:03.000000    1234 fsHandler.go:135] fs: disk usage and inodes count on following dirs took '
         '1.2345s: [/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/42/fs]',
         "KubeletDiskUsageSlow", None),
        # near-misses
        ('I0501 12:00:04.000000    1234 kubelet.go:2000] "SyncLoop (PLEG): event for pod" pod="default/web-1"',
         None, None),
        ("runtime: program exceeds 10000-thread limit", None, None),
        ('E0501 12:00:06.000000    1234 pod_workers.go:1298] "Error syncing pod, skipping" err="failed to '
         '\\"StartContainer\\" with RunContainerError: \\"failed to create containerd task: failed to create shim '
         'task: error mounting \\\\\\"/var/lib/kubelet/pods/0a1b/etc-hosts\\\\\\" to rootfs at '
         '\\\\\\"/etc/hosts\\\\\\": not a directory: unknown\\"" pod="default/web-2"', "EtcHostsMountFailed", None),
        # four probe failures in a row are not a storm; the fifth makes one, and so does each further one
        *[(f'I0501 12:00:1{i}.000000    1234 prober.go:107] "Probe failed" probeType="Liveness" pod="default/web-{i}" '
           'containerName="app" probeResult="failure" output="Get \\"http://10.0.0.5:8080/healthz\\": context '
           'deadline exceeded"', "ProbeFailureStorm" if i >= 4 else None, None) for i in range(6)],
        ('I0501 12:00:20.000000    1234 prober.go:107] "Probe failed" probeType="Readiness" pod="default/web-9" '
         'containerName="app" probeResult="failure" output=""', "ProbeFailureStorm", None),
        ('E0501 12:00:05.000000    1234 kuberuntime_manager.go:1] "CreateContainer in sandbox failed" '
         'err="context deadline exceeded"', None, None),
    ]),
    "smartd-journal-monitor.json": ("smartd", [
        ("Device: /dev/sda [SAT], 8 Currently unreadable (pending) sectors", "DiskBadSectors", None),
        ("Device: /dev/sdb [SAT], 128 Offline uncorrectable sectors", "DiskBadSectors", "DiskBadBlock"),
        ("Device: /dev/nvme0, 240 Currently unreadable (pending) sectors", "DiskBadSectors", "DiskBadBlock"),
        ("Device: /dev/sda [SAT], 0 Currently unreadable (pending) sectors", None, None),
        ("Device: /dev/sda [SAT], SMART Usage Attribute: 194 Temperature_Celsius changed from 35 to 36", None, None),
        ("Device: /dev/sda [SAT], Self-Test Log error count increased from 0 to 1", None, None),
    ]),
    "abrt-journal-monitor.json": ("abrt-notification", [
        ("Process 4242 (python3) crashed in PyObject_Call()", "CCPPCrash", None),
        ("Process 777 (java) of user 1000 encountered an uncaught java.lang.NullPointerException exception",
         "UncaughtException", None),
        ("Display server Xorg crash in miPointerSetPosition", "XorgCrash", None),
        ("System encountered a fatal error in nvme_timeout()", "VMcore", None),
        ("System encountered a non-fatal error in __warn()", "KernelOops", None),
        ("abrt-notification: Sending notification", None, None),
    ]),
    "containerd-journal-monitor.json": ("containerd", [
        ('time="2025-05-01T12:00:00.000000000Z" level=error msg="RunPodSandbox for &PodSandboxMetadata{Name:web-1,} '
         'failed, error" error="failed to create containerd task: failed to create shim task: OCI runtime create '
         'failed: runc create failed: unable to start container process: unknown"', "ContainerCreationFailed", None),
        ("runtime: failed to create new OS thread (have 2049 already; errno=11)", "ThreadCreationFailed", None),
        ('time="2025-05-01T12:00:01.000000000Z" level=info msg="StartContainer for \\"abc\\" returns successfully"',
         None, None),
    ]),
}


@pytest.mark.parametrize("name", sorted(TABLES))
def test_a_shipped_journal_monitor_finds_its_lines_and_nothing_else(journal: RealJournal, name: str) -> None:
    identifier, table = TABLES[name]
    monitor = LogMonitor(load(DEFAULTS_DIR / name), host=HostRoot(journal.root))
    events: list[EventReport] = []
    held: list[ConditionReport] = []
    want_events = [event for _, event, _ in table if event]
    try:
        asyncio.run(monitor.observe(dt.datetime.now(dt.UTC)))
        for message, _, _ in table:
            journal.send(message, identifier=identifier)
        journal.send("the last line", identifier=identifier)

        def probe() -> bool:
            observation = asyncio.run(monitor.observe(dt.datetime.now(dt.UTC)))
            events.extend(observation.events)
            held[:] = observation.conditions or held
            return len(events) >= len(want_events) and any("the last line" in m for m in _seen(monitor))

        wait_until(probe, timeout=15, what=f"{len(want_events)} events from {name}")
    finally:
        asyncio.run(monitor.close())

    assert [e.reason for e in events] == want_events
    conditions = [reason for _, _, reason in table if reason]
    if conditions:
        (condition,) = held
        assert (condition.status, condition.reason) == (Status.TRUE, conditions[-1])
        assert condition.message == next(m for m, _, r in reversed(table) if r)  # the line that set it
    else:
        assert held == []


def _seen(monitor: LogMonitor) -> list[str]:
    return list(monitor._buffer)


@pytest.mark.parametrize("name", sorted(TABLES))
def test_every_journal_rule_is_exercised_by_its_table(name: str) -> None:
    lines = [message for message, _, _ in TABLES[name][1]]
    # a pattern that spans lines is matched, as in the monitor, against the lines up to the newest one
    texts = ["\n".join(lines[:end]) for end in range(1, len(lines) + 1)]
    for rule in load(DEFAULTS_DIR / name).rules:
        candidates = texts if rule.spans_lines else lines
        assert any(rule.regex.search(t) for t in candidates), f"no table line for {rule.reason}: {rule.pattern}"
