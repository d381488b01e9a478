"""The agent started while the API server is away (issue 19): observations wait in its inbox until it can read the
Node. A kernel-log flood overflows the Events it may keep; every one dropped is counted and logged, and the
condition set before the flood still reaches the Node once the API server is back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kubernetes import client

from tests.e2e.agent_harness import HUNG, Agent, kmsg, start_agent, write_config
from tests.e2e.conftest import LocalCluster
from tests.e2e.fake_host import host_root
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e

FLOOD = 1500  # OOM-kill lines, each an Event; the inbox keeps 1000


def log_records(agent: Agent) -> list[dict]:
    out = []
    for line in agent.log.read_text(errors="replace").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def test_events_dropped_while_the_api_server_is_away_at_start_up_are_counted_and_logged(
    private_cluster: LocalCluster, tmp_path: Path, agents: list[Agent],
) -> None:
    cluster = private_cluster  # stops kube-apiserver: never on the shared session cluster
    assert cluster.owned is not None
    core = client.CoreV1Api(cluster.api)
    node = "kwok-node-0"
    root = host_root(tmp_path)
    config = write_config(tmp_path / "agent.yaml", ["kernel-monitor.json"])
    seq = [0]
    cluster.owned.stop_component("kube-apiserver")
    try:
        agents.append(a := start_agent(cluster.kubeconfig, node, root, config, tmp_path / "agent.log"))
        kmsg(root, HUNG, seq)
        for i in range(FLOOD):
            kmsg(root, f"Out of memory: Killed process {10000 + i} (worker) total-vm:1024kB", seq)
        wait_until(lambda: any(r.get("msg", "").startswith("events dropped while waiting to be sent (oldest first)")
                               for r in log_records(a))
                   or (a.proc.poll() is not None and pytest.fail(a.log.read_text()[-3000:])),
                   timeout=60, what="the first dropped Event logged while the API server is away")
    finally:
        cluster.owned.start_component("kube-apiserver")

    def deadlock() -> bool:
        c = next((c for c in core.read_node_status(node).status.conditions or [] if c.type == "KernelDeadlock"), None)
        return c is not None and c.status == "True"

    wait_until(deadlock, timeout=60, what="KernelDeadlock=True written once the API server is back")
    summary = wait_until(lambda: next((r for r in log_records(a) if r.get("msg") == "events dropped while waiting to "
                                       "be sent"), None), timeout=30, what="the summary of dropped Events")
    dropped = summary["dropped"]
    # The oldest go first: the hung task's Event, then OOM kills; only what did not fit (FLOOD + 1 - 1000) at most.
    assert dropped["TaskHung"] == 1 and 0 < dropped["OOMKilling"] <= FLOOD - 1000, summary
    assert summary["total"] == sum(dropped.values()), summary
    assert a.proc.poll() is None
