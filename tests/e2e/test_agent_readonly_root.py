"""A root filesystem that went read-only before the agent started (issue 19): the mount table says `ro` and the
kernel log still holds the remount line. `run` must report ReadonlyFilesystem=True, and keep it True across a
restart (the "seen rw" memory dies with the process; the kernel log does not)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from kubernetes import client

from tests.e2e.agent_harness import Agent, kmsg, start_agent
from tests.e2e.conftest import LocalCluster
from tests.e2e.fake_host import host_root
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e

REMOUNT = "EXT4-fs (sda1): Remounting filesystem read-only"


def readonly(core: client.CoreV1Api, node: str) -> client.V1NodeCondition | None:
    return next((c for c in core.read_node_status(node).status.conditions or [] if c.type == "ReadonlyFilesystem"),
                None)


def test_a_root_already_read_only_at_start_is_reported_by_run_and_after_a_restart(
    cluster: LocalCluster, core: client.CoreV1Api, node_pool: Callable[..., list[str]], tmp_path: Path,
    agents: list[Agent],
) -> None:
    (node,) = node_pool(1)
    root = host_root(tmp_path)
    (root / "proc" / "mounts").write_text("/dev/sda1 / ext4 ro,relatime 0 0\nproc /proc proc rw 0 0\n")
    kmsg(root, "EXT4-fs error (device sda1): ext4_journal_check_start:83: Detected aborted journal", seq := [0])
    kmsg(root, REMOUNT, seq)
    config = tmp_path / "agent.yaml"
    config.write_text("apiVersion: nodemedic.io/v1alpha1\nkind: AgentConfig\nheartbeat: 1m\nsystemLogMonitors: []\n"
                      "repair: {enabled: false}\n"
                      "checks:\n" + "".join(f"  {c}: {{enabled: false}}\n" for c in (
                          "cpu", "memory", "disk", "ntp", "blockdev", "runtime", "kubelet")) +
                      "  filesystem: {interval: 1s, timeout: 1s, mounts: [/], expectRw: []}\n")

    # The one-shot check on the same host root says the same as `run` will.
    shot = subprocess.run([sys.executable, "-m", "agent", "check", "--json", "--config", str(config),
                           "--host-root", str(root)], check=False, capture_output=True, text=True,
                          timeout=60)
    assert shot.returncode == 1, shot.stderr
    rows = {r["type"]: r for r in json.loads(shot.stdout)["conditions"]}
    assert rows["ReadonlyFilesystem"]["status"] == "True", rows

    agents.append(a := start_agent(cluster.kubeconfig, node, root, config, tmp_path / "agent.log"))
    first = wait_until(lambda: ((c := readonly(core, node)) and c.status == "True" and c)
                       or (a.proc.poll() is not None and pytest.fail(a.log.read_text()[-3000:])),
                       timeout=30, what="ReadonlyFilesystem=True from the first run")
    assert REMOUNT in first.message and first.reason == "FilesystemIsReadOnly", first.message

    a.stop(signal.SIGKILL)
    # While it is down, a second filesystem goes read-only too. Only a restarted agent that re-read the kernel log
    # can name /data, so the condition below cannot pass on what the first agent wrote; and it must never be False.
    (root / "proc" / "mounts").write_text("/dev/sda1 / ext4 ro,relatime 0 0\n/dev/sdb1 /data ext4 ro 0 0\n")
    kmsg(root, "EXT4-fs (sdb1): Remounting filesystem read-only", seq)
    config.write_text(config.read_text().replace("mounts: [/]", "mounts: [/, /data]"))
    agents.append(a := start_agent(cluster.kubeconfig, node, root, config, tmp_path / "agent2.log"))

    def after_restart() -> client.V1NodeCondition | None:
        c = readonly(core, node)
        assert c is not None and c.status == "True", f"ReadonlyFilesystem left True across the restart: {c}"
        if a.proc.poll() is not None:
            pytest.fail(a.log.read_text()[-3000:])
        return c if "/data (/dev/sdb1" in c.message else None

    second = wait_until(after_restart, timeout=30, what="the restarted agent's ReadonlyFilesystem=True")
    assert f"/ (/dev/sda1, ext4) is read-only; the kernel logged: {REMOUNT}" in second.message, second.message
    assert second.last_transition_time == first.last_transition_time
