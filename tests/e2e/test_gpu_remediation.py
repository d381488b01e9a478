"""A fatal Xid line in a kwok node's kernel log, end to end: the agent's shipped gpu-monitor.json sets
GPUFatalError naming the GPU, the remediator's shipped gpu-fatal-error rule taints the node, and its pods are
evicted through the Eviction API and rescheduled on the healthy node."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from tests.e2e.agent_harness import Agent, condition, kmsg, start_agent, write_config
from tests.e2e.conftest import LocalCluster
from tests.e2e.fake_host import host_root
from tests.e2e.remediator_harness import (
    deployment,
    events_once,
    place_on_first,
    pool_scope,
    running_on,
    start_remediator,
    taint_keys,
    wait_running,
)
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
XID_79 = "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."


def shipped_rule(name: str) -> dict:
    policy = yaml.safe_load((ROOT / "deploy" / "policy" / "default.yaml").read_text())
    return next(rule for rule in policy["rules"] if rule["name"] == name)


def test_a_fatal_xid_taints_the_gpu_node_and_its_pods_move(
    cluster: LocalCluster, core: client.CoreV1Api, apps: client.AppsV1Api, namespace: str,
    node_pool: Callable[..., list[str]], tmp_path: Path, processes: list, agents: list[Agent],
) -> None:
    pool = node_pool(2)
    sick = pool[0]

    def create() -> None:
        apps.create_namespaced_deployment(namespace, deployment("trainer", 3, pool))
        assert set(wait_running(core, namespace, "trainer", 3).values()) == {sick}

    place_on_first(core, pool, create)
    root = host_root(tmp_path)
    config = write_config(tmp_path / "agent.yaml", ["gpu-monitor.json"])
    agents.append(agent := start_agent(cluster.kubeconfig, sick, root, config, tmp_path / "agent.log"))
    wait_until(lambda: condition(core, sick, "GPUFatalError") is not None
               or (agent.proc.poll() is not None and pytest.fail(agent.log.read_text()[-3000:])),
               timeout=30, what="the agent's first status write (GPUFatalError's default)")
    assert condition(core, sick, "GPUFatalError").status == "False"
    rule = shipped_rule("gpu-fatal-error")
    policy = yaml.safe_dump({
        "apiVersion": "nodemedic.io/v1alpha1", "kind": "RemediationPolicy", "rules": [rule],
        "evictor": {"namespaces": {"include": [namespace]}},  # never touch another test's pods
        "limits": {"ownerCooldown": "0s"},
        "safety": {"maxTaintedNodes": 10, "maxTaintedNodesPercent": 100},
        **yaml.safe_load(pool_scope(pool))})
    processes.append(start_remediator(tmp_path, cluster.kubeconfig, policy, name="gpu", lease_namespace=namespace))

    kmsg(root, XID_79, [100])

    fatal = wait_until(lambda: (c := condition(core, sick, "GPUFatalError")) and c.status == "True" and c,
                       timeout=30, what="GPUFatalError=True on the Node")
    assert (fatal.reason, fatal.message) == ("FatalXid", XID_79)  # the message names the GPU: PCI 0000:3b:00
    wait_until(lambda: rule["taint"]["key"] in taint_keys(core, sick), timeout=60,
               what=f"{rule['taint']['key']} on {sick} after the rule's for: {rule['condition']['for']}")
    moved = wait_until(lambda: (p := running_on(core, namespace, "trainer")) and len(p) == 3
                       and sick not in p.values() and p, timeout=90,
                       what="the trainer pods evicted from the GPU node and running on the healthy one")
    assert set(moved.values()) == {pool[1]}
    # A loaded run listed two of the three Events while the remediator's log already had all three: events_once.
    evicted = events_once(core, namespace, "NodemedicEvicted", 3)
    assert len({e.involved_object.name for e in evicted}) == 3
