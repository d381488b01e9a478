"""Helpers for remediator end-to-end tests: run `nodemedic-remediator` as a real process, write node
conditions the way an agent would, build pools of per-test kwok nodes and workloads on them."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from kubernetes import client

from hack.kcp import build, paths, prometheus
from hack.kcp.ports import free_port
from tests import chart_monitoring as cm
from tests.waiting import wait_until

REMEDIATOR = [sys.executable, "-m", "remediator"]


@dataclass
class RemediatorProcess:
    proc: subprocess.Popen[bytes]
    port: int
    log_path: Path
    identity: str
    exited: bool = field(default=False)

    def metrics(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as r:
            return r.read().decode()

    def metric(self, name: str, **labels: str) -> float:
        """Sum of a metric's samples whose labels include `labels` (0 when absent)."""
        total = 0.0
        for line in self.metrics().splitlines():
            if line.startswith("#") or not line.startswith(name):
                continue
            head, _, value = line.rpartition(" ")
            sample, _, label_text = head.partition("{")
            if sample != name:
                continue
            if all(f'{k}="{v}"' in label_text for k, v in labels.items()):
                total += float(value)
        return total

    def plan(self) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/plan", timeout=5) as r:
            return json.loads(r.read())

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def log_events(self) -> list[dict]:
        out = []
        for line in self.log().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
        return out

    def kill(self) -> None:
        """SIGKILL: the remediator gets no chance to clean up (no lease release)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> int:
        return terminate(self.proc)


def terminate(proc: subprocess.Popen[bytes]) -> int:
    """SIGTERM, 15 s to shut down cleanly, then SIGKILL: the exit code."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    return proc.returncode


def start_remediator(tmp: Path, kubeconfig: Path, policy: str, *, name: str, lease_namespace: str,
                     extra: list[str] | None = None, policy_path: Path | None = None) -> RemediatorProcess:
    policy_file = policy_path or tmp / f"{name}-policy.yaml"
    if policy_path is None:
        policy_file.write_text(policy)
    port = free_port()
    log_path = tmp / f"{name}.log"
    argv = [*REMEDIATOR, "run", "--policy", str(policy_file), "--kubeconfig", str(kubeconfig),
            "--lease-namespace", lease_namespace, "--listen", f"127.0.0.1:{port}", "--identity", name,
            "--lease-duration", "6", "--renew-deadline", "4", "--retry-period", "1", *(extra or [])]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
    rp = RemediatorProcess(proc, port, log_path, name)

    def up() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"remediator {name} exited with {proc.returncode}:\n{rp.log()[-3000:]}")
        return rp.healthy()

    try:
        wait_until(up, timeout=30, what=f"remediator {name} /healthz")
    except BaseException:
        rp.stop()  # never handed to the caller's clean-up: a process left running fails the cluster's `down`
        raise
    return rp


def set_condition(core: client.CoreV1Api, node: str, type_: str, status: str, *, reason: str = "Test",
                  message: str = "written by the e2e test") -> None:
    """Write one NodeCondition with a strategic-merge patch of nodes/status, as an agent would."""
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    current = next((c for c in core.read_node_status(node).status.conditions or [] if c.type == type_), None)
    transition = now if current is None or current.status != status else current.last_transition_time.strftime(
        "%Y-%m-%dT%H:%M:%SZ")
    core.patch_node_status(node, {"status": {"conditions": [{
        "type": type_, "status": status, "reason": reason, "message": message,
        "lastHeartbeatTime": now, "lastTransitionTime": transition,
    }]}})


def taint_keys(core: client.CoreV1Api, node: str) -> set[str]:
    return {t.key for t in core.read_node(node).spec.taints or []}


def nodemedic_events(core: client.CoreV1Api, namespace: str, reason: str) -> list[client.CoreV1Event]:
    return [e for e in core.list_namespaced_event(namespace, field_selector=f"reason={reason}").items
            if e.reporting_component == "nodemedic-remediator"]


def events_once(core: client.CoreV1Api, namespace: str, reason: str, count: int,
                timeout: float = 30) -> list[client.CoreV1Event]:
    """nodemedic's Events of `reason` once there are at least `count`: the remediator writes an Event after the action
    it reports returns, so the effect (a replacement Running) can be seen before the Event lands. Callers assert the
    exact number and content, so one Event too many still fails."""
    return wait_until(lambda: (found := nodemedic_events(core, namespace, reason)) and len(found) >= count and found,
                      timeout=timeout, what=f"{count} {reason} Events in {namespace}")


def new_namespace(core: client.CoreV1Api, name: str) -> str:
    """Create a namespace and return once KCM has made its `default` ServiceAccount (pods need it)."""
    core.create_namespace({"metadata": {"name": name}})
    wait_until(lambda: core.list_namespaced_service_account(name).items, timeout=30,
               what=f"ServiceAccount {name}/default")
    return name


UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"


def cordon(core: client.CoreV1Api, nodes: list[str], on: bool) -> None:
    """Cordon or uncordon. An uncordon returns once kube-controller-manager has also removed the
    node.kubernetes.io/unschedulable taint it added, which kube-scheduler's filters still honour: on a loaded machine
    that lags, and a pod created in between could only go to the nodes never cordoned (a metrics-utilization test
    saw a replacement placed back on the hot node that way)."""
    for n in nodes:
        core.patch_node(n, {"spec": {"unschedulable": on}})
    if not on:
        wait_until(lambda: not any(t.key == UNSCHEDULABLE_TAINT for n in nodes
                                   for t in core.read_node(n).spec.taints or []),
                   timeout=60, what=f"the {UNSCHEDULABLE_TAINT} taint gone from {nodes}")


def place_on_first(core: client.CoreV1Api, pool: list[str], create: Callable[[], object]) -> None:
    """Create workloads while every pool node but the first is cordoned, so their pods all land on pool[0].
    `create` returns once its pods are placed (it waits for them): the cordons are lifted when it returns, and a pod
    the scheduler had not bound yet could then land on any pool node (a Prometheus test saw one do so under load)."""
    cordon(core, pool[1:], True)
    try:
        create()
    finally:
        cordon(core, pool[1:], False)


def pool_affinity(nodes: list[str]) -> dict:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": nodes}]}]}}}


def deployment(name: str, replicas: int, nodes: list[str], *, volumes: list | None = None,
               priority_class: str = "", tolerations: list | None = None, cpu: str = "100m") -> dict:
    labels = {"app": name}
    spec: dict = {"containers": [{"name": "app", "image": "registry.invalid/app:1",
                                  "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}],
                  "affinity": pool_affinity(nodes)}
    if volumes:
        spec["volumes"] = volumes
    if priority_class:
        spec["priorityClassName"] = priority_class
    if tolerations:
        spec["tolerations"] = tolerations
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": labels},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": spec}}}


def pods_of(core: client.CoreV1Api, ns: str, app: str) -> list[client.V1Pod]:
    return [p for p in core.list_namespaced_pod(ns, label_selector=f"app={app}").items
            if p.metadata.deletion_timestamp is None]


def running_on(core: client.CoreV1Api, ns: str, app: str) -> dict[str, str]:
    """pod name -> node for Running pods of `app`."""
    return {p.metadata.name: p.spec.node_name for p in pods_of(core, ns, app) if p.status.phase == "Running"}


def wait_running(core: client.CoreV1Api, ns: str, app: str, count: int, timeout: float = 60) -> dict[str, str]:
    return wait_until(lambda: (r := running_on(core, ns, app)) and len(r) == count and r,
                      timeout=timeout, what=f"{count} Running pods of {app}")


def monotonic() -> float:
    return time.monotonic()


def pool_scope(pool: list[str]) -> str:
    """The policy line that keeps a remediator to one test's node pool (conftest's `node_pool` labels every node
    it makes with nodemedic.io/e2e-pool=<suffix>): other tests' sick nodes neither take the breaker's slots nor
    receive taints or pods."""
    suffixes = {n.rsplit("-", 1)[0].removeprefix("pool-") for n in pool}
    assert len(suffixes) == 1, f"nodes of several pools: {pool}"
    return f'nodeSelector: "nodemedic.io/e2e-pool={suffixes.pop()}"'


def alerting_prometheus(tmp: Path, remediator: RemediatorProcess) -> prometheus.Prometheus:
    """A real Prometheus scraping `remediator` with the chart's alert rules (fails when Prometheus is not built)."""
    if build.is_missing("prometheus"):
        pytest.fail(f"Prometheus is not built ({paths.binary('prometheus')} missing): run `make build`",
                    pytrace=False)
    return prometheus.start(tmp / "prometheus", [
        {"job_name": "nodemedic-remediator", "static_configs": [{"targets": [f"127.0.0.1:{remediator.port}"]}]}],
        [cm.write_rules(tmp / "rules.yaml", cm.rule_groups(cm.rendered()))])
