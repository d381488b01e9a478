"""nodemedic's metrics in a real Prometheus (the pinned one): it scrapes three agents playing kwok nodes and a
remediator, with the chart's PrometheusRule loaded as its rules (rendered with short `for`s; promtool's unit cases
in tests/unit/deploy/test_prometheus_rules.py hold the shipped ones). A hung task on two nodes, with a breaker that
allows one tainted node, makes a real remediation (a taint and evictions) and a real breaker trip; the circuit-breaker
and remediation-stuck alerts must fire from those series, and every panel query of the chart's Grafana dashboard must
return data."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from kubernetes import client

from hack.kcp import build, paths, prometheus
from hack.kcp.ports import free_port
from tests import chart_monitoring as cm
from tests.e2e.agent_harness import HUNG, Agent, kmsg, start_agent, write_config
from tests.e2e.conftest import LocalCluster
from tests.e2e.fake_host import host_root
from tests.e2e.remediator_harness import (
    deployment,
    place_on_first,
    pool_scope,
    running_on,
    start_remediator,
    taint_keys,
    wait_running,
)
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e

TAINT = "nodemedic.io/kernel-deadlock"
AGENT_JOB, REMEDIATOR_JOB = "nodemedic-agent", "nodemedic-remediator"  # the chart's Service names: its alerts' jobs


def policy(namespace: str, pool: list[str], sink_port: int) -> str:
    return f"""
apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
rules:
- name: kernel-deadlock
  condition: {{type: KernelDeadlock, status: "True", for: 1s}}
  taint: {{key: {TAINT}, value: "true", effect: NoSchedule}}
  evict: true
  recoverAfter: 10m
evictor:
  namespaces: {{include: [{namespace}]}}
limits: {{ownerCooldown: 0s, maxNoOfPodsToEvictPerNode: 50, maxNoOfPodsToEvictTotal: 100}}
safety: {{maxTaintedNodes: 1, maxTaintedNodesPercent: 100}}
notifications:
  sinks:
  # Nothing listens there: each alert fails once, and the notification counters show it.
  - {{type: webhook, name: pager, url: "http://127.0.0.1:{sink_port}/alerts", timeout: 1s, maxAttempts: 1}}
{pool_scope(pool)}
"""


def test_a_remediation_and_a_breaker_trip_fire_their_alerts_and_fill_every_dashboard_panel(
    cluster: LocalCluster, core: client.CoreV1Api, apps: client.AppsV1Api, namespace: str,
    node_pool: Callable[..., list[str]], tmp_path: Path, agents: list[Agent], processes: list,
) -> None:
    if build.is_missing("prometheus"):
        pytest.fail(f"Prometheus is not built ({paths.binary('prometheus')} missing): run `make build`",
                    pytrace=False)
    pool = node_pool(3)
    sick, held = pool[0], pool[1]
    config = write_config(tmp_path / "agent.yaml", ["kernel-monitor.json"])
    roots, agent_ports = {}, {}
    for node in pool:
        roots[node], agent_ports[node] = host_root(tmp_path / node), free_port()
        agents.append(start_agent(cluster.kubeconfig, node, roots[node], config, tmp_path / f"agent-{node}.log",
                                  listen=f"127.0.0.1:{agent_ports[node]}"))
    place_on_first(core, pool, lambda: (apps.create_namespaced_deployment(namespace, deployment("web", 2, pool)),
                                        wait_running(core, namespace, "web", 2)))
    assert set(running_on(core, namespace, "web").values()) == {sick}
    remediator = start_remediator(tmp_path, cluster.kubeconfig, policy(namespace, pool, free_port()), name="r1",
                                  lease_namespace=namespace)
    processes.append(remediator)

    docs = cm.rendered("prometheusRule.circuitBreakerOpenFor=5s", "prometheusRule.remediationStuckFor=5s")
    rules = cm.write_rules(tmp_path / "rules.yaml", cm.rule_groups(docs))
    server = prometheus.start(tmp_path / "prometheus", [
        {"job_name": REMEDIATOR_JOB, "static_configs": [{"targets": [f"127.0.0.1:{remediator.port}"]}]},
        # The node label the chart's ServiceMonitor adds from the pod's node.
        {"job_name": AGENT_JOB, "static_configs": [{"targets": [f"127.0.0.1:{agent_ports[n]}"], "labels": {"node": n}}
                                                   for n in pool]},
    ], [rules])
    processes.append(server)
    wait_until(lambda: (up := server.targets_up()) and len(up) == 4 and set(up.values()) == {"up"} and up,
               timeout=30, what="Prometheus scraping the three agents and the remediator")

    seqs = {n: [0] for n in pool}
    kmsg(roots[sick], HUNG, seqs[sick])
    wait_until(lambda: TAINT in taint_keys(core, sick), timeout=30, what=f"{TAINT} on {sick}")
    wait_until(lambda: (p := running_on(core, namespace, "web")) and len(p) == 2 and sick not in p.values(),
               timeout=60, what="the web pods evicted from the sick node and running elsewhere")
    kmsg(roots[held], HUNG, seqs[held])  # a second sick node: the breaker (one tainted node) holds it

    def firing() -> dict[str, list[dict[str, str]]] | None:
        alerts: dict[str, list[dict[str, str]]] = {}
        for a in server.alerts():
            alerts.setdefault(a["labels"]["alertname"], []).append(a["labels"])
        stuck = {(a["node"], a["type"]) for a in alerts.get("NodemedicRemediationStuck", [])}
        both = {(sick, "KernelDeadlock"), (held, "KernelDeadlock")}
        return alerts if "NodemedicCircuitBreakerOpen" in alerts and both <= stuck else None

    alerts = wait_until(firing, timeout=90, what="the circuit-breaker and remediation-stuck alerts firing",
                        interval=1.0)
    print("\nalerts firing in Prometheus:")
    for name, labelsets in sorted(alerts.items()):
        for labels in labelsets:
            print(f"  {name} {dict(sorted(labels.items()))}")
    assert alerts["NodemedicCircuitBreakerOpen"] == [{"alertname": "NodemedicCircuitBreakerOpen",
                                                     "severity": "critical"}]
    assert TAINT not in taint_keys(core, held), "the breaker let a second node be tainted"
    assert {a["node"] for a in alerts["NodemedicRemediationStuck"]} == {sick, held}
    assert "NodemedicAgentNotReporting" not in alerts and "NodemedicNoLeader" not in alerts

    # Notifications fail at the closed port; wait for one to be counted so the panel has its result.
    wait_until(lambda: remediator.metric("nodemedic_notifications_total", sink="pager", result="failed") > 0,
               timeout=30, what="a failed notification counted")
    wait_until(lambda: server.query('sum(nodemedic_notifications_total{result="failed"}) > 0'), timeout=30,
               what="Prometheus scraping the failed notification")
    counts = {}
    for where, expr in cm.panel_queries(cm.dashboard(docs)):
        counts[where] = (len(server.query(expr)), expr)
    print("\ndashboard panels (series returned):")
    for where, (n, expr) in counts.items():
        print(f"  {n:3d}  {where}: {expr}")
    assert all(n > 0 for n, _ in counts.values()), {w: e for w, (n, e) in counts.items() if n == 0}
