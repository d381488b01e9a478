"""Hostile inputs from the API server cost at most the record that carries them (issue 25, "stop the cluster-wide
failures first"), against the real control plane: a Node condition stamped in year 9999, and objects of a mebibyte
on the watches of both programs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from kubernetes import client

from agent.checks import BUILTIN
from tests.e2e.agent_harness import Agent, condition, start_agent
from tests.e2e.conftest import LocalCluster
from tests.e2e.fake_host import host_root
from tests.e2e.remediator_harness import (
    deployment,
    place_on_first,
    pool_scope,
    running_on,
    set_condition,
    start_remediator,
    taint_keys,
    wait_running,
)
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e

TAINT = "nodemedic.io/kernel-deadlock"
MiB = 1 << 20


def policy(namespace: str, pool: list[str], condition_type: str) -> str:
    return f"""
apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
rules:
- name: sick
  condition: {{type: {condition_type}, status: "True", for: 1s}}
  taint: {{key: {TAINT}, value: "true", effect: NoSchedule}}
  evict: true
evictor:
  namespaces: {{include: [{namespace}]}}
limits: {{ownerCooldown: 0s}}
safety: {{maxTaintedNodes: 10, maxTaintedNodesPercent: 100}}
{pool_scope(pool)}
"""


def test_a_node_stamped_in_year_9999_costs_only_itself_and_every_other_sick_node_is_remediated(
    cluster: LocalCluster, core: client.CoreV1Api, apps: client.AppsV1Api, namespace: str,
    node_pool: Callable[..., list[str]], tmp_path: Path, processes: list,
) -> None:
    # The API server stores any RFC 3339 time. Before the fix this one stamp made every planning cycle raise
    # OverflowError; the controller retried forever and no node anywhere was tainted or drained.
    pool = node_pool(4)
    future, sick_1, sick_2, spare = pool
    core.patch_node_status(future, {"status": {"conditions": [{
        "type": "KernelDeadlock", "status": "True", "reason": "Test", "message": "stamped in year 9999",
        "lastHeartbeatTime": "9999-12-31T23:59:59Z", "lastTransitionTime": "9999-12-31T23:59:59Z"}]}})
    for node in (future, sick_1, sick_2):
        others = [n for n in pool if n != node]
        place_on_first(core, [node, *others], lambda node=node: (  # type: ignore[misc]
            apps.create_namespaced_deployment(namespace, deployment(f"on-{node}", 2, pool)),
            wait_running(core, namespace, f"on-{node}", 2)))
        assert set(running_on(core, namespace, f"on-{node}").values()) == {node}

    r = start_remediator(tmp_path, cluster.kubeconfig, policy(namespace, pool, "KernelDeadlock"), name="y9999",
                         lease_namespace=namespace)
    processes.append(r)
    set_condition(core, sick_1, "KernelDeadlock", "True")
    set_condition(core, sick_2, "KernelDeadlock", "True")

    for node in (sick_1, sick_2):
        wait_until(lambda node=node: TAINT in taint_keys(core, node), timeout=30,  # type: ignore[misc]
                   what=f"{TAINT} on {node}")
        moved = wait_until(lambda node=node: (p := running_on(core, namespace, f"on-{node}"))  # type: ignore[misc]
                           and len(p) == 2 and node not in p.values() and p,
                           timeout=60, what=f"the pods of {node} evicted and running elsewhere")
        assert set(moved.values()) <= {spare, *(n for n in (sick_1, sick_2) if n != node)} | {future}
    # The year-9999 node cannot prove its condition has lasted `for`: left alone, and said so once.
    assert TAINT not in taint_keys(core, future)
    assert set(running_on(core, namespace, f"on-{future}").values()) == {future}
    events = r.log_events()
    unusable = [e for e in events if e.get("msg") == "unusable times treated as unknown"]
    assert [e["object"] for e in unusable] == [f"node/{future}"], unusable
    assert not [e for e in events if e.get("msg") == "planning cycle failed"]
    assert r.healthy()


def big_env(name: str) -> list[dict[str, str]]:
    """A mebibyte in one environment variable (annotations are capped at 256 KiB in all; a pod spec is not)."""
    return [{"name": name, "value": "x" * MiB}]


def test_objects_of_a_mebibyte_are_seen_by_the_agent_and_the_remediator_which_both_keep_running(
    cluster: LocalCluster, core: client.CoreV1Api, apps: client.AppsV1Api, namespace: str,
    node_pool: Callable[..., list[str]], tmp_path: Path, processes: list, agents: list[Agent],
) -> None:
    # aiohttp's line iterator stopped at 512 KiB: the first watch event over that raised LineTooLong, uncaught in
    # both programs. Every object here is watched by one of them: the Node (a mebibyte of status.images) by the
    # remediator, the pods (a mebibyte of env) by both: the agent watches its node's pods.
    node, other = node_pool(2)
    images = [{"names": [f"registry.invalid/big/{i}:{'v' * 1000}"], "sizeBytes": 1} for i in range(1100)]
    core.patch_node_status(node, {"status": {"images": images}})
    stored = core.read_node(node, _preload_content=False).data
    assert len(stored) > MiB and len(json.loads(stored)["status"]["images"]) == 1100, "the Node is over a mebibyte"

    web = deployment("big", 1, [node, other])
    web["spec"]["template"]["spec"]["containers"][0]["env"] = big_env("BIG")
    place_on_first(core, [node, other], lambda: (apps.create_namespaced_deployment(namespace, web),
                                                 wait_running(core, namespace, "big", 1)))
    hold = "nodemedic.io/e2e-hold"
    core.create_namespaced_pod(namespace, {
        "metadata": {"name": "held", "finalizers": [hold]},
        "spec": {"nodeName": node, "terminationGracePeriodSeconds": 0,
                 "containers": [{"name": "c", "image": "registry.invalid/app:1", "env": big_env("HELD")}]}})

    root = host_root(tmp_path)
    config = tmp_path / "agent.yaml"
    disabled = "".join(f"  {name}: {{enabled: false}}\n" for name in BUILTIN if name != "stuckPods")
    config.write_text(f"apiVersion: nodemedic.io/v1alpha1\nkind: AgentConfig\nchecks:\n{disabled}"
                      "  stuckPods: {interval: 1s, timeout: 1s, margin: 3s}\nsystemLogMonitors: []\n"
                      "repair: {enabled: false}\n")
    agents.append(agent := start_agent(cluster.kubeconfig, node, root, config, tmp_path / "agent.log"))
    r = start_remediator(tmp_path, cluster.kubeconfig, policy(namespace, [node, other], "PodsStuckTerminating"),
                         name="big", lease_namespace=namespace)
    processes.append(r)
    try:
        first = wait_until(lambda: condition(core, node, "PodsStuckTerminating")
                           or (agent.proc.poll() is not None and pytest.fail(agent.log.read_text()[-3000:])),
                           timeout=30, what="the agent's first PodsStuckTerminating report")
        assert first.status == "False"
        core.delete_namespaced_pod("held", namespace, grace_period_seconds=0)  # a mebibyte MODIFIED event

        # The agent read the held pod's events (its name is in the condition); the remediator read the Node and the
        # pods (it taints the node on the agent's condition and moves the big pod off it).
        stuck = wait_until(lambda: (c := condition(core, node, "PodsStuckTerminating")) and c.status == "True" and c,
                           timeout=30, what="PodsStuckTerminating=True naming the held pod")
        assert f"{namespace}/held" in stuck.message
        wait_until(lambda: TAINT in taint_keys(core, node), timeout=30, what=f"{TAINT} on {node}")
        wait_until(lambda: set(running_on(core, namespace, "big").values()) == {other}, timeout=60,
                   what="the big pod evicted and running on the other node")
        assert agent.proc.poll() is None, agent.log.read_text()[-3000:]
        assert r.proc.poll() is None and r.healthy(), r.log()[-3000:]
        assert r.metric("nodemedic_watch_lines_too_long_total") == 0
        assert "line bound" not in agent.log.read_text() + r.log()
    finally:
        core.patch_namespaced_pod("held", namespace, {"metadata": {"finalizers": None}})
