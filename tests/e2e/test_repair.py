"""Repair ladders on kwok nodes with real agents carrying out the asks (tests/e2e/repair_harness.py) and a real
remediator: five sick nodes repaired one at a time, the rails that hold a repair back (the unhealthy share, the window,
the opt-out, a person's hold), and a node no autoscaler replaces handed to a person, with the alert firing in a real
Prometheus. The test plays only what the machine would do: a kubelet that comes back after its restart (its condition
written False), a node that stays sick after a reboot (its condition kept True)."""

from __future__ import annotations

import datetime as dt
import itertools
import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
from kubernetes import client

from remediator.kubectl import render
from remediator.read_side.why_answer import WhyAnswer
from tests.e2e.conftest import LocalCluster
from tests.e2e.remediator_harness import (
    RemediatorProcess,
    alerting_prometheus,
    nodemedic_events,
    pool_scope,
    set_condition,
    start_remediator,
    taint_keys,
)
from tests.e2e.repair_harness import REPAIR, RepairingAgent, answer, ladder, repairing_agent
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e

TAINT = "nodemedic.io/kubelet-unhealthy"
KUBECTL_NODEMEDIC = [sys.executable, "-m", "remediator.kubectl.cli"]


def policy(pool: list[str], ladder_yaml: str, repair: str = "{maxConcurrent: 1, maxUnhealthyPercent: 100}") -> str:
    return f"""
apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
rules:
- name: kubelet-unhealthy
  condition: {{type: KubeletUnhealthy, status: "True", for: 1s}}
  taint: {{key: {TAINT}, value: "true", effect: NoSchedule}}
  evict: false
  recoverAfter: 1s
  repair: {ladder_yaml}
strategies:
- name: RemovePodsViolatingNodeTaints
safety: {{maxTaintedNodes: 10, maxTaintedNodesPercent: 100}}
repair: {repair}
{pool_scope(pool)}
"""


def agents_for(tmp: Path, cluster: LocalCluster, pool: list[str], processes: list,
               restart_exit: int = 0) -> dict[str, RepairingAgent]:
    out = {n: repairing_agent(tmp, cluster.kubeconfig, n, restart_exit=restart_exit) for n in pool}
    processes.extend(out.values())
    return out


def remediator(tmp: Path, cluster: LocalCluster, text: str, namespace: str, processes: list) -> RemediatorProcess:
    r = start_remediator(tmp, cluster.kubeconfig, text, name="r1", lease_namespace=namespace)
    processes.append(r)
    return r


def waiting(r: RemediatorProcess, node: str) -> list[str]:
    return [w["why"] for w in (r.plan().get("repair") or {}).get("waiting", []) if w["node"] == node]


def kubectl_nodemedic(cluster: LocalCluster, *args: str) -> str:
    done = subprocess.run([*KUBECTL_NODEMEDIC, "--kubeconfig", str(cluster.kubeconfig), *args], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_five_sick_nodes_are_repaired_one_at_a_time(
        cluster: LocalCluster, core: client.CoreV1Api, namespace: str, node_pool: Callable[..., list[str]],
        tmp_path: Path, processes: list) -> None:
    pool = node_pool(5)
    agents = agents_for(tmp_path, cluster, pool, processes)
    r = remediator(tmp_path, cluster, policy(pool, "[{action: restart, service: kubelet, wait: 1m}, {action: person}]",
                                             "{maxConcurrent: 1, maxUnhealthyPercent: 100, "
                                             "poolLabels: [nodemedic.io/e2e-pool]}"), namespace, processes)
    for node in pool:
        set_condition(core, node, "KubeletUnhealthy", "True", reason="KubeletUnhealthy")
    repaired: list[str] = []
    while len(repaired) < len(pool):
        under = wait_until(lambda: [n for n in pool if n not in repaired and ladder(core, n) is not None],
                           timeout=60, what="the next node's repair step", interval=0.2)
        assert len(under) == 1, f"more than one node in repair at once: {under}"
        node = under[0]
        done = wait_until(lambda n=node: (a := answer(core, n)) is not None and a.reason == "Done" and a,
                          timeout=30, what=f"the agent's Done answer on {node}")
        assert done.message.startswith(f"request {ladder(core, node)['id']}: restarted kubelet"), done.message
        set_condition(core, node, "KubeletUnhealthy", "False", reason="KubeletHealthy")  # the kubelet came back
        wait_until(lambda n=node: ladder(core, n) is None, timeout=30, what=f"{node}'s ladder ended", interval=0.2)
        repaired.append(node)
    # The remediator's own record (its log, in the order it wrote): each ladder from its step to its end, none
    # overlapping another. It logs a ladder's end after the write that ends it, which the loop above waited for.
    def logged() -> list[dict] | None:
        events = r.log_events()
        ended = {e.get("node") for e in events if e.get("event") == "NodemedicRepaired"}
        return events if ended >= set(pool) else None
    events = wait_until(logged, timeout=30, what="every node's NodemedicRepaired in the remediator's log")
    times = {(e["event"], e["node"]): dt.datetime.fromisoformat(e["time"]) for e in events
             if e.get("event") in ("NodemedicRepairStep", "NodemedicRepaired") and e.get("node") in pool}
    spans = sorted((times[("NodemedicRepairStep", n)], times[("NodemedicRepaired", n)], n) for n in pool)
    first = spans[0][0]
    print("\nfive sick nodes, repair.maxConcurrent 1 (the remediator's log, seconds after the first step):")
    print("  node                       restart asked   repaired")
    for asked, ended, node in spans:
        print(f"  {node:26s} {(asked - first).total_seconds():13.2f} {(ended - first).total_seconds():10.2f}")
    for (_, ended, before), (asked, _, after) in itertools.pairwise(spans):
        assert asked >= ended, f"{after}'s repair began before {before}'s ended"
    assert [n for _, _, n in spans] == repaired
    assert all(len(a.commands) == 1 for a in agents.values()), {n: a.commands for n, a in agents.items()}
    wait_until(lambda: all(TAINT not in taint_keys(core, n) for n in pool), timeout=30,
               what="every taint gone once its condition cleared")
    assert r.metric("nodemedic_repair_steps_finished_total", action="restart", result="repaired") == 5
    repaired_events = [e for e in nodemedic_events(core, "default", "NodemedicRepaired")
                       if e.involved_object.name in pool]
    assert sorted(e.involved_object.name for e in repaired_events) == sorted(pool), repaired_events


def test_past_the_unhealthy_share_nothing_is_repaired(
        cluster: LocalCluster, core: client.CoreV1Api, namespace: str, node_pool: Callable[..., list[str]],
        tmp_path: Path, processes: list) -> None:
    pool = node_pool(5)
    agents = agents_for(tmp_path, cluster, pool[:2], processes)
    r = remediator(tmp_path, cluster, policy(pool, "[{action: restart, service: kubelet, wait: 1m}]",
                                             "{maxUnhealthyPercent: 20, poolLabels: [nodemedic.io/e2e-pool]}"),
                   namespace, processes)
    for node in pool[:2]:
        set_condition(core, node, "KubeletUnhealthy", "True", reason="KubeletUnhealthy")
    group = f"nodemedic.io/e2e-pool={pool[0].split('-')[1]}"
    wait_until(lambda: r.metric("nodemedic_repair_halted", group=group) == 1, timeout=30,
               what="the repair halted for the group")
    for node in pool[:2]:
        whys = wait_until(lambda n=node: waiting(r, n), timeout=30, what=f"{node} waiting")
        assert "2 of 5 nodes in" in whys[0] and "none of them is repaired" in whys[0], whys
        assert TAINT in taint_keys(core, node) and ladder(core, node) is None
    print(f"\npast the unhealthy share: {whys[0]}")
    # One of them recovers: back within the share, the other is repaired.
    set_condition(core, pool[0], "KubeletUnhealthy", "False", reason="KubeletHealthy")
    wait_until(lambda: agents[pool[1]].commands, timeout=60, what=f"{pool[1]} repaired once within the share")
    assert agents[pool[0]].commands == []


def test_outside_the_window_no_reboot_and_an_opted_out_node_nothing(
        cluster: LocalCluster, core: client.CoreV1Api, namespace: str, node_pool: Callable[..., list[str]],
        tmp_path: Path, processes: list) -> None:
    pool = node_pool(3)
    agents = agents_for(tmp_path, cluster, pool, processes)
    now = dt.datetime.now(dt.UTC)
    start, end = (now + dt.timedelta(hours=2)).strftime("%H:%M"), (now + dt.timedelta(hours=3)).strftime("%H:%M")
    r = remediator(tmp_path, cluster, policy(pool, "[{action: reboot, wait: 5m}, {action: person}]",
                                             f"{{maxConcurrent: 5, maxUnhealthyPercent: 100, "
                                             f"window: {{start: \"{start}\", end: \"{end}\"}}}}"), namespace, processes)
    core.patch_node(pool[1], {"metadata": {"labels": {"nodemedic.io/no-repair": "true"}}})
    for node in pool[:2]:
        set_condition(core, node, "KubeletUnhealthy", "True", reason="KubeletUnhealthy")
    closed = wait_until(lambda: waiting(r, pool[0]), timeout=30, what=f"{pool[0]} waiting for the window")
    assert closed[0].startswith(f"outside the repair window ({start}-{end} UTC"), closed
    opted = wait_until(lambda: waiting(r, pool[1]), timeout=30, what=f"{pool[1]} left alone")
    assert opted == ["the node opted out of repair (nodemedic.io/no-repair=true)"]
    print(f"\n{pool[0]}: {closed[0]}\n{pool[1]}: {opted[0]}")
    assert all(TAINT in taint_keys(core, n) for n in pool[:2]), "the taints go on whatever the repair rails say"
    assert [ladder(core, n) for n in pool] == [None, None, None]
    assert all(a.commands == [] for a in agents.values())


def test_hold_stops_a_ladder_and_resume_lets_it_go_on(
        cluster: LocalCluster, core: client.CoreV1Api, namespace: str, node_pool: Callable[..., list[str]],
        tmp_path: Path, processes: list) -> None:
    pool = node_pool(2)
    node = pool[0]
    agents_for(tmp_path, cluster, [node], processes, restart_exit=1)  # the restart fails: the step ends at once
    r = remediator(tmp_path, cluster, policy(pool, "[{action: restart, service: kubelet, wait: 10m}, "
                                                   "{action: person}]"), namespace, processes)
    print("\n" + kubectl_nodemedic(cluster, "repair", node, "--hold").strip())
    set_condition(core, node, "KubeletUnhealthy", "True", reason="KubeletUnhealthy")
    held = wait_until(lambda: waiting(r, node), timeout=30, what="the ladder held")
    assert held[0].startswith("held by a person (nodemedic.io/repair-hold:"), held
    assert ladder(core, node) is None
    print(kubectl_nodemedic(cluster, "repair", node, "--resume").strip())
    wait_until(lambda: (a := answer(core, node)) is not None and a.reason == "Failed", timeout=60,
               what="the agent's Failed answer to the restart")
    state = wait_until(lambda: (s := ladder(core, node)) and s["action"] == "person" and s, timeout=30,
                       what="the failed restart followed by the person step")
    assert state["history"][0]["result"].startswith("the agent answered Failed: restarting kubelet failed"), state
    # Handed to a person and held again: `--next` is refused until `--resume`, nothing moves.
    print(kubectl_nodemedic(cluster, "repair", node, "--hold").strip())
    refused = subprocess.run([*KUBECTL_NODEMEDIC, "--kubeconfig", str(cluster.kubeconfig), "repair", node, "--next"],
                             capture_output=True, text=True, timeout=60, check=False)
    print(f"kubectl nodemedic repair {node} --next: exit {refused.returncode}: {refused.stderr.strip()}")
    assert refused.returncode == 2 and "repair is held" in refused.stderr and "--resume` first" in refused.stderr
    wait_until(lambda: any(w.startswith("held by a person") for w in waiting(r, node)), timeout=30,
               what="the held ladder in the plan")
    assert ladder(core, node)["action"] == "person"


def test_a_node_no_autoscaler_replaces_is_handed_to_a_person_and_the_alert_fires(
        cluster: LocalCluster, core: client.CoreV1Api, namespace: str, node_pool: Callable[..., list[str]],
        tmp_path: Path, processes: list) -> None:
    pool = node_pool(2)
    node = pool[0]
    agent = agents_for(tmp_path, cluster, [node], processes)[node]
    r = remediator(tmp_path, cluster, policy(pool, "[{action: reboot, wait: 2m}, {action: replace, wait: 10m}, "
                                                   "{action: person}]"), namespace, processes)
    server = alerting_prometheus(tmp_path, r)
    processes.append(server)
    t0 = time.monotonic()
    set_condition(core, node, "KubeletUnhealthy", "True", reason="KubeletUnhealthy")
    wait_until(agent.exited, timeout=60, what="the agent gone with its node's reboot")
    t_reboot = time.monotonic() - t0
    before = "00000000-0000-4000-8000-000000000001"
    assert agent.boot_id() != before
    agent.start_again()
    done = wait_until(lambda: (a := answer(core, node)) is not None and a.reason == "Done" and a, timeout=60,
                      what="the restarted agent proving the reboot")
    assert f"rebooted: boot id {before} -> {agent.boot_id()}" in done.message, done.message
    # The condition stays (the test keeps it True): after the reboot's wait, replace is skipped and a person told.
    state = wait_until(lambda: (s := ladder(core, node)) and s["action"] == "person" and s, timeout=200,
                       what="the ladder handed to a person", interval=2.0)
    t_person = time.monotonic() - t0
    assert [h["action"] for h in state["history"]] == ["reboot", "replace"]
    assert state["history"][1]["result"].startswith("skipped: no Karpenter NodeClaim owns this node"), state
    event = wait_until(lambda: [e for e in nodemedic_events(core, "default", "NodemedicNeedsAPerson")
                                if e.involved_object.name == node], timeout=30, what="the NodemedicNeedsAPerson Event")
    firing = wait_until(lambda: [a["labels"] for a in server.alerts()
                                 if a["labels"]["alertname"] == "NodemedicNodeNeedsAPerson"], timeout=90,
                        what="NodemedicNodeNeedsAPerson firing in Prometheus", interval=1.0)
    assert firing == [{"alertname": "NodemedicNodeNeedsAPerson", "node": node, "rule": "kubelet-unhealthy",
                       "severity": "warning"}]
    with urllib.request.urlopen(f"http://127.0.0.1:{r.port}/why/{node}", timeout=5) as resp:
        why = render.why(WhyAnswer.read(json.loads(resp.read()), f"/why/{node}"))
    print(f"\nreboot asked and done (agent gone) {t_reboot:.1f}s, handed to a person {t_person:.1f}s after the "
          f"condition\nEvent: {event[0].message}\nalert: {firing[0]}\nannotation {REPAIR}: {json.dumps(state)}\n{why}")
    assert "handed to a person" in why and "tried: reboot" in why
    assert TAINT in taint_keys(core, node)
