"""Run modes as descheduler has them: the chart's CronJob runs `run --once`; one run does what `plan` predicted and
exits 0; outside the maintenance window a run evicts nothing (the sick node is still tainted)."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from hack.kcp import paths
from tests.e2e.conftest import LocalCluster
from tests.e2e.remediator_harness import (
    deployment,
    nodemedic_events,
    place_on_first,
    pool_scope,
    running_on,
    set_condition,
    taint_keys,
    wait_running,
)
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
TAINT = "nodemedic.io/kernel-deadlock"


def cronjob_args() -> list[str]:
    """The remediator's arguments as the chart's CronJob mode renders them (helm template, the real chart)."""
    helm = paths.binary("helm")
    if not helm.exists():
        pytest.fail(f"helm is not built ({helm} missing): run `make build`; this test never skips", pytrace=False)
    out = subprocess.run([str(helm), "template", "t", str(ROOT / "deploy" / "helm" / "nodemedic"),
                          "--set", "remediator.mode=cronjob"], capture_output=True, text=True, check=True).stdout
    (cron,) = [d for d in yaml.safe_load_all(out) if d and d["kind"] == "CronJob"]
    assert cron["spec"]["concurrencyPolicy"] == "Forbid"
    (container,) = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["nodemedic-remediator"]
    return list(container["args"])


def policy(namespace: str, pool: list[str], window: str = "") -> str:
    return f"""apiVersion: nodemedic.io/v1alpha1
{pool_scope(pool)}
kind: RemediationPolicy
rules:
- name: kernel-deadlock
  condition: {{type: KernelDeadlock, status: "True", for: 0s}}
  taint: {{key: {TAINT}, value: "true", effect: NoSchedule}}
  evict: true
  recoverAfter: 10m
evictor: {{namespaces: {{include: [{namespace}]}}}}
limits: {{ownerCooldown: 0s}}
eviction: {{retryDeadline: 60s, initialBackoff: 200ms, maxBackoff: 1s}}
{window}
"""


def run(args: list[str], kubeconfig: Path, policy_file: Path) -> subprocess.CompletedProcess[str]:
    args = [a if not a.startswith("--policy=") else f"--policy={policy_file}" for a in args]
    return subprocess.run([sys.executable, "-m", "remediator", *args, f"--kubeconfig={kubeconfig}"],
                          check=False, capture_output=True, text=True, timeout=180)


def sick_pool(core: client.CoreV1Api, apps: client.AppsV1Api, namespace: str,
              node_pool: Callable[..., list[str]]) -> tuple[list[str], dict[str, str]]:
    pool = node_pool(2)
    place_on_first(core, pool, lambda: (apps.create_namespaced_deployment(namespace, deployment("web", 3, pool)),
                                        wait_running(core, namespace, "web", 3)))
    set_condition(core, pool[0], "KernelDeadlock", "True")
    return pool, running_on(core, namespace, "web")


def test_the_cronjob_mode_runs_one_cycle_that_evicts_what_plan_predicted_and_exits_0(
    cluster: LocalCluster, core: client.CoreV1Api, apps: client.AppsV1Api, namespace: str,
    node_pool: Callable[..., list[str]], tmp_path: Path,
) -> None:
    args = cronjob_args()
    assert args[:2] == ["run", "--once"]
    pool, before = sick_pool(core, apps, namespace, node_pool)
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(policy(namespace, pool))

    def predicted_now() -> list[str]:
        planned = subprocess.run([sys.executable, "-m", "remediator", "plan", "--policy", str(policy_file),
                                  "--kubeconfig", str(cluster.kubeconfig), "--json"],
                                 capture_output=True, text=True, check=True)
        return sorted(e["name"] for e in json.loads(planned.stdout)["evictions"])

    # `for: 0s` still waits out lastTransitionTime's one-second resolution in a process that did not watch it.
    predicted = wait_until(lambda: (p := predicted_now()) and p, timeout=15, what="plan to predict the evictions")
    assert predicted == sorted(before)

    done = run(args, cluster.kubeconfig, policy_file)
    assert done.returncode == 0, done.stderr[-3000:]
    assert TAINT in taint_keys(core, pool[0])
    evicted = sorted(e.involved_object.name for e in nodemedic_events(core, namespace, "NodemedicEvicted"))
    assert evicted == predicted
    assert "one cycle done" in done.stderr + done.stdout
    moved = wait_running(core, namespace, "web", 3)
    assert set(moved.values()) == {pool[1]}


def test_outside_the_maintenance_window_a_run_taints_the_sick_node_but_evicts_nothing(
    cluster: LocalCluster, core: client.CoreV1Api, apps: client.AppsV1Api, namespace: str,
    node_pool: Callable[..., list[str]], tmp_path: Path,
) -> None:
    pool, before = sick_pool(core, apps, namespace, node_pool)
    now = dt.datetime.now(dt.UTC)
    start, end = now + dt.timedelta(hours=2), now + dt.timedelta(hours=3)
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(policy(namespace, pool, f'maintenanceWindow: {{start: "{start:%H:%M}", end: "{end:%H:%M}", '
                                             f'timeZone: UTC}}'))
    done = run(cronjob_args(), cluster.kubeconfig, policy_file)
    assert done.returncode == 0, done.stderr[-3000:]
    assert TAINT in taint_keys(core, pool[0])
    assert nodemedic_events(core, namespace, "NodemedicEvicted") == []
    assert running_on(core, namespace, "web") == before
    assert "3 deferred" in done.stderr + done.stdout
