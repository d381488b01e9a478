"""The agent playing a kwok node, with a fixture host root, against the real control plane."""

from __future__ import annotations

import datetime as dt
import signal
from collections.abc import Callable
from pathlib import Path

import pytest
from kubernetes import client

from tests.e2e.agent_harness import HUNG, Agent, condition, kmsg, start_agent, write_config
from tests.e2e.conftest import LocalCluster
from tests.e2e.fake_host import host_root
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e


def test_a_hung_task_line_sets_kernel_deadlock_and_survives_restarts_and_config_changes(
    cluster: LocalCluster, core: client.CoreV1Api, node_pool: Callable[..., list[str]], tmp_path: Path,
    agents: list[Agent],
) -> None:
    (node,) = node_pool(1)
    root = host_root(tmp_path)
    config = write_config(tmp_path / "agent.yaml", ["kernel-monitor.json", "readonly-monitor.json"])
    ready_before = condition(core, node, "Ready")
    seq = [0]
    agents.append(a := start_agent(cluster.kubeconfig, node, root, config, tmp_path / "agent.log"))
    wait_until(lambda: condition(core, node, "KernelDeadlock") is not None
               or (a.proc.poll() is not None and pytest.fail(a.log.read_text()[-3000:])),
               timeout=30, what="the agent's first status write")
    kmsg(root, HUNG, seq)
    c = wait_until(lambda: (c := condition(core, node, "KernelDeadlock")) and c.status == "True" and c,
                   timeout=30, what="KernelDeadlock=True on the Node")
    assert "blocked for more than 120 seconds" in c.message
    ready = condition(core, node, "Ready")
    assert (ready.status, ready.reason, ready.last_transition_time) == (
        ready_before.status, ready_before.reason, ready_before.last_transition_time), "kwok's Ready was touched"

    a.stop(signal.SIGKILL)
    last = condition(core, node, "KernelDeadlock").last_heartbeat_time  # the killed agent's last write
    # Heartbeat times have whole seconds: start the new agent in a later second than the last write, so that a
    # newer heartbeat proves the restarted agent wrote (its first write follows the seed at start-up).
    wait_until(lambda: dt.datetime.now(dt.UTC) - last >= dt.timedelta(seconds=1), timeout=5,
               what="a second to pass after the last write", interval=0.05)
    agents.append(a := start_agent(cluster.kubeconfig, node, root, config, tmp_path / "agent2.log"))

    def rewritten() -> client.V1NodeCondition | None:
        if a.proc.poll() is not None:
            pytest.fail(f"the restarted agent exited: {a.log.read_text()[-3000:]}")
        now = condition(core, node, "KernelDeadlock")
        return now if now.last_heartbeat_time > last else None

    after = wait_until(rewritten, timeout=30, what="the restarted agent's first status write")
    # A restart must never flip it back to False, nor move its transition time (the remediator's `for` timer).
    assert (after.status, after.last_transition_time) == ("True", c.last_transition_time), after

    a.stop()
    write_config(config, ["readonly-monitor.json"])
    agents.append(start_agent(cluster.kubeconfig, node, root, config, tmp_path / "agent3.log"))
    wait_until(lambda: condition(core, node, "KernelDeadlock") is None, timeout=30,
               what="KernelDeadlock deleted once no configured check owns it")
    assert condition(core, node, "ReadonlyFilesystem") is not None
    assert condition(core, node, "Ready").status == "True"


def test_after_the_api_server_comes_back_the_agent_reports_the_latest_state(
    private_cluster: LocalCluster, tmp_path: Path, agents: list[Agent],
) -> None:
    cluster = private_cluster  # this test stops kube-apiserver: never on the shared session cluster
    assert cluster.owned is not None
    core = client.CoreV1Api(cluster.api)
    node = "kwok-node-0"
    root = host_root(tmp_path)
    config = write_config(tmp_path / "agent.yaml", ["kernel-monitor.json", "readonly-monitor.json"])
    seq = [0]
    agents.append(a := start_agent(cluster.kubeconfig, node, root, config, tmp_path / "agent.log"))
    wait_until(lambda: condition(core, node, "ReadonlyFilesystem") is not None, timeout=30, what="first write")
    cluster.owned.stop_component("kube-apiserver")
    try:
        kmsg(root, "EXT4-fs (sda1): Remounting filesystem read-only", seq)
        kmsg(root, HUNG, seq)
        wait_until(lambda: "status write failed" in a.log.read_text(), timeout=30,
                   what="the agent trying, and failing, to write while the API server is away")
        assert a.proc.poll() is None, "the agent died while the API server was away"
    finally:
        cluster.owned.start_component("kube-apiserver")
    for type_ in ("ReadonlyFilesystem", "KernelDeadlock"):
        wait_until(lambda t=type_: (c := condition(core, node, t)) and c.status == "True", timeout=60,
                   what=f"{type_}=True written after the API server came back")
    assert a.proc.poll() is None

