"""Pods stuck terminating, seen from the API: the agent's pod watch (scoped to its kwok node) and the stuckPods
check, against the real control plane. A finalizer holds a deleted pod the way a wedged kubelet would."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from kubernetes import client

from agent.checks import BUILTIN
from tests.e2e.agent_harness import Agent, condition, start_agent
from tests.e2e.conftest import LocalCluster
from tests.e2e.fake_host import host_root
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e

HOLD = "nodemedic.io/e2e-hold"


def pod_on(node: str, name: str) -> dict:
    return {"metadata": {"name": name, "finalizers": [HOLD]},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "c", "image": "registry.invalid/app:1"}]}}


def test_a_pod_held_past_its_deletion_time_on_this_node_is_reported_and_clears_when_it_goes(
    cluster: LocalCluster, core: client.CoreV1Api, namespace: str, node_pool: Callable[..., list[str]],
    tmp_path: Path, agents: list[Agent],
) -> None:
    node, other = node_pool(2)
    root = host_root(tmp_path)
    config = tmp_path / "agent.yaml"
    disabled = "".join(f"  {name}: {{enabled: false}}\n" for name in BUILTIN if name != "stuckPods")
    config.write_text(f"apiVersion: nodemedic.io/v1alpha1\nkind: AgentConfig\nchecks:\n{disabled}"
                      "  stuckPods: {interval: 1s, timeout: 1s, margin: 3s}\nsystemLogMonitors: []\n"
                      "repair: {enabled: false}\n")
    core.create_namespaced_pod(namespace, pod_on(node, "stuck"))
    core.create_namespaced_pod(namespace, pod_on(other, "elsewhere"))  # stuck too, but not on the agent's node
    agents.append(agent := start_agent(cluster.kubeconfig, node, root, config, tmp_path / "agent.log"))
    first = wait_until(lambda: condition(core, node, "PodsStuckTerminating")
                       or (agent.proc.poll() is not None and pytest.fail(agent.log.read_text()[-3000:])),
                       timeout=30, what="the agent's first PodsStuckTerminating report")
    assert first.status == "False"

    for name in ("stuck", "elsewhere"):
        core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)

    stuck = wait_until(lambda: (c := condition(core, node, "PodsStuckTerminating")) and c.status == "True" and c,
                       timeout=30, what="PodsStuckTerminating=True once the pod is 3 s past its deletion time")
    assert f"{namespace}/stuck" in stuck.message
    assert "elsewhere" not in stuck.message
    for name in ("stuck", "elsewhere"):
        core.patch_namespaced_pod(name, namespace, {"metadata": {"finalizers": None}})
    wait_until(lambda: condition(core, node, "PodsStuckTerminating").status == "False", timeout=30,
               what="PodsStuckTerminating=False once the pod is gone")
