"""Repair after the drain on the real node (hack/kcp/realnode.py): the chart's agent pod restarts the real kubelet and
reboots the node when the remediator asks, through the API only.

The chart is installed as it ships, with an agent config whose repair commands are this machine's stand-ins for
`systemctl` (hack/kcp/nodeservice.py: `hack/cluster node-service restart kubelet` and `hack/cluster node-reboot`,
run in the host's namespaces through the shipped nsenter prefix; a reboot here stops every container and service of
the node, writes a new boot id to a file the agent reads in place of the kernel's, and starts them again). The
remediator runs as a process on the host with the chart's remediator ServiceAccount token (its replicas scaled to 0):
its pods would otherwise live on the node it drains and reboots, the only node here that runs containers. Then:
- the kubelet stopped → KubeletUnhealthy=True → the ladder's restart, by the agent → Ready, the condition False, the
  ladder and the taint gone;
- /run/reboot-required written (what Debian's package manager leaves, what kured reboots for) → the shipped
  reboot-required plugin monitor says RebootRequired=True → a restart that does not clear it → the drain → the reboot
  → the node Ready with a new boot id, the condition False, the taint gone;
- the annotation that orders a repair written by anyone but the remediator (a cluster admin here): refused by the API
  server;
- the kubelet stopped while the agent runs (Ready=Unknown, the agent still writing): nothing fenced, a person's
  `fence --confirm` refused, the ladder's restart instead (in the first test);
- the whole node dark (every service and container stopped, the agent's included): Kubernetes alone leaves the
  StatefulSet's pod Terminating; a person's `kubectl nodemedic fence --confirm` → the out-of-service taint → the pod
  Running on another node; the node powered on again → the taint gone once it is Ready and its agent reports.
One real node runs on a machine at a time (xdist group)."""

from __future__ import annotations

import base64
import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from hack.kcp import image, paths, realnode
from nodemedic_common.fence_contract import CONFIRM_ANNOTATION, FENCE_ANNOTATION, OUT_OF_SERVICE_KEY
from tests.e2e.conftest import LocalCluster, _started
from tests.e2e.remediator_harness import (
    RemediatorProcess,
    cordon,
    deployment,
    new_namespace,
    nodemedic_events,
    running_on,
    start_remediator,
    taint_keys,
)
from tests.e2e.repair_harness import REPAIR, answer, ladder
from tests.waiting import Moments, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("real_node")]

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "nodemedic"
NAMESPACE = "nodemedic"
KWOK_NODES = ["kwok-node-0", "kwok-node-1"]
BOOT_ID = Path("/var/lib/nodemedic-e2e/boot_id")  # the node's boot id, as the stand-in reboot renews it
REBOOT_REQUIRED = Path("/run/reboot-required")
SHIPPED_AGENT_CONFIG = (ROOT / "deploy" / "agent" / "default.yaml").read_text()
# The kubelet check: a probe every 30 s while settled, then 2 more 5 s apart to confirm (agent/services/healthz.py).
KUBELET_DETECTION_S = 30 + 2 * 5 + 10

POLICY = """
apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
rules:
# `for: 90s`: the node lifecycle controller marks the node Ready=Unknown 40-50 s after the kubelet stops, before the
# ladder restarts it, so the test sees the kubelet silent while the agent writes.
- name: kubelet-unhealthy
  condition: {type: KubeletUnhealthy, status: "True", for: 90s}
  taint: {key: nodemedic.io/kubelet-unhealthy, value: "true", effect: NoSchedule}
  evict: false
  recoverAfter: 5s
  repair:
  - {action: restart, service: kubelet, wait: 2m}
  - {action: person}
# kured's case, with a restart first to show the ladder climbing: a restart does not clear a pending reboot.
- name: reboot-required
  condition: {type: RebootRequired, status: "True", for: 5s}
  taint: {key: nodemedic.io/reboot-required, value: "true", effect: NoSchedule}
  evict: false
  recoverAfter: 5s
  repair:
  - {action: restart, service: kubelet, wait: 1m}
  - {action: reboot, wait: 5m}
  - {action: person}
strategies:
- name: RemovePodsViolatingNodeTaints
limits: {ownerCooldown: 0s}
safety: {maxTaintedNodes: 3, maxTaintedNodesPercent: 100}
repair: {maxUnhealthyPercent: 100}
# The agent writes every 10 s here (agent_config): 30 s without a write is silence.
darkNodes: {agentSilence: 30s}
"""

# The shipped reboot-required monitor, every 10 s instead of 5 min, looking at the host's /run through the host mount.
REBOOT_REQUIRED_MONITOR = {
    "plugin": "custom",
    "pluginConfig": {"invoke_interval": "10s", "timeout": "5s", "max_output_length": 200, "concurrency": 1},
    "source": "reboot-required-monitor",
    "conditions": [{"type": "RebootRequired", "reason": "NoRebootRequired",
                    "message": "no installed update waits for a reboot"}],
    "rules": [{"type": "permanent", "condition": "RebootRequired", "reason": "RebootRequired",
               "path": "/bin/sh", "args": ["-c", "if [ -e /host/run/reboot-required ]; then echo 'a reboot is "
                                                 "required'; exit 1; fi; echo 'no reboot required'"],
               "timeout": "5s"}],
}


def helm(cluster: LocalCluster, *args: str) -> str:
    done = subprocess.run([str(paths.binary("helm")), *args, f"--kubeconfig={cluster.kubeconfig}"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"helm {' '.join(args)}: {done.stderr[-3000:]}"
    return done.stdout


def kubectl(cluster: LocalCluster, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(paths.binary("kubectl")), f"--kubeconfig={cluster.kubeconfig}", *args],
                          capture_output=True, text=True, timeout=60, check=False)


def agent_config(cluster: LocalCluster) -> str:
    """The shipped agent config, with the reboot-required monitor and this machine's repair commands. They enter the
    host's namespaces through the shipped nsenter prefix, aimed at the control plane's etcd instead of PID 1: PID 1 of
    these VMs is not the host's init, and its namespaces cannot be opened even by root."""
    assert cluster.owned is not None
    doc = yaml.safe_load(SHIPPED_AGENT_CONFIG)
    hack = [sys.executable, str(ROOT / "hack" / "cluster")]
    state = ["--state-dir", str(cluster.owned.state_dir)]
    etcd = next(p.pid for p in cluster.owned.processes if p.name == "etcd")
    prefix = doc["repair"]["hostCommandPrefix"]
    assert prefix[:3] == ["nsenter", "--target", "1"], prefix
    doc["heartbeat"] = "10s"  # the second witness: a dark node is told apart within seconds, not 5 minutes
    doc["customPluginMonitors"] = ["reboot-required.json"]
    doc["repair"]["hostCommandPrefix"] = ["nsenter", "--target", str(etcd), *prefix[3:]]
    doc["repair"]["commands"] = {
        "restart": {"kubelet": [*hack, "node-service", "restart", "kubelet", *state], "containerd": None,
                    "crio": None},
        # 20 s off: long enough for the kubelet's absence to be seen, shorter than the 40 s grace period.
        "reboot": [*hack, "node-reboot", *state, "--boot-id-file", str(BOOT_ID), "--off-seconds", "20"],
    }
    doc["repair"]["bootIdPath"] = str(BOOT_ID)
    return yaml.safe_dump(doc, sort_keys=False)


def service_account_kubeconfig(cluster: LocalCluster, path: Path, account: str) -> Path:
    """A kubeconfig with a token of the chart's ServiceAccount `account` (TokenRequest, 2 hours)."""
    assert cluster.owned is not None
    core = client.CoreV1Api(cluster.api)
    token = core.create_namespaced_service_account_token(account, NAMESPACE, {
        "spec": {"audiences": [], "expirationSeconds": 7200}}).status.token
    ca = base64.b64encode((cluster.owned.pki_dir / "ca.crt").read_bytes()).decode()
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "sa",
        "clusters": [{"name": "local", "cluster": {"server": cluster.owned.server, "certificate-authority-data": ca}}],
        "users": [{"name": account, "user": {"token": token}}],
        "contexts": [{"name": "sa", "context": {"cluster": "local", "user": account}}]}))
    return path


def condition(core: client.CoreV1Api, type_: str) -> client.V1NodeCondition | None:
    return next((c for c in core.read_node_status(realnode.NAME).status.conditions or [] if c.type == type_), None)


def status(core: client.CoreV1Api, type_: str) -> str:
    c = condition(core, type_)
    return "absent" if c is None else c.status


def agent_pod(core: client.CoreV1Api) -> client.V1Pod | None:
    found = [p for p in core.list_namespaced_pod(NAMESPACE, label_selector="app.kubernetes.io/component=agent").items
             if p.spec.node_name == realnode.NAME]
    return found[0] if found else None


def silent_node(remediator: RemediatorProcess) -> dict | None:
    """The real node as the remediator's plan sees it while its kubelet is silent, or None."""
    nodes = (remediator.plan().get("darkNodes") or {}).get("nodes") or []
    return next((n for n in nodes if n["node"] == realnode.NAME), None)


def kubectl_nodemedic(cluster: LocalCluster, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "remediator.kubectl.cli", "--kubeconfig", str(cluster.kubeconfig),
                           *args], capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture(scope="module")
def repairing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalCluster, RemediatorProcess]]:
    tmp = tmp_path_factory.mktemp("repair-real-node")
    name = f"pytest-{os.getpid()}-repair-{secrets.token_hex(2)}"
    BOOT_ID.parent.mkdir(parents=True, exist_ok=True)
    BOOT_ID.write_text("11111111-2222-4333-8444-555555555555\n")
    REBOOT_REQUIRED.unlink(missing_ok=True)
    with _started(name, len(KWOK_NODES), real_nodes=1) as cluster:
        core, apps = client.CoreV1Api(cluster.api), client.AppsV1Api(cluster.api)
        cordon(core, KWOK_NODES, True)
        repository, tag = image.reference().rsplit(":", 1)
        values = tmp / "values.yaml"
        values.write_text(yaml.safe_dump({
            "image": {"repository": repository, "tag": tag, "pullPolicy": "Never"},
            "agent": {"config": agent_config(cluster),
                      "extraFiles": {"reboot-required.json": json.dumps(REBOOT_REQUIRED_MONITOR, indent=1)}},
            "remediator": {"replicas": 0}}))
        helm(cluster, "install", "nodemedic", str(CHART), f"--namespace={NAMESPACE}", "--create-namespace",
             f"--values={values}")
        wait_until(lambda: (a := agent_pod(core)) is not None and a.status.container_statuses
                   and a.status.container_statuses[0].ready, timeout=120, what="the agent pod Ready on the real node")
        cordon(core, KWOK_NODES, False)
        deploy = apps.read_namespaced_deployment("nodemedic-remediator", NAMESPACE)
        account = deploy.spec.template.spec.service_account_name
        kubeconfig = service_account_kubeconfig(cluster, tmp / "remediator.kubeconfig", account)
        remediator = start_remediator(tmp, kubeconfig, POLICY, name="remediator-on-the-host",
                                      lease_namespace=NAMESPACE)
        try:
            yield cluster, remediator
        finally:
            remediator.stop()
            print(f"\nremediator log (last lines):\n{remediator.log()[-3000:]}")
            REBOOT_REQUIRED.unlink(missing_ok=True)
            assert cluster.owned is not None
            cluster.owned.load()  # the services the agent restarted are recorded in the state file
            helm(cluster, "uninstall", "nodemedic", f"--namespace={NAMESPACE}", "--wait", "--timeout=120s")
    assert realnode.traces() == [], "hack/cluster down left the real node's traces behind"


def test_a_stopped_kubelet_is_restarted_by_the_agent_when_the_remediator_asks(
        repairing: tuple[LocalCluster, RemediatorProcess]) -> None:
    cluster, remediator = repairing
    assert cluster.owned is not None
    core = client.CoreV1Api(cluster.api)
    assert status(core, "KubeletUnhealthy") == "False"
    t0 = time.monotonic()
    cluster.owned.stop_component("kubelet")
    mark = Moments(t0)
    marks = mark.at

    wait_until(lambda: mark("KubeletUnhealthy=True", status(core, "KubeletUnhealthy") == "True"),
               timeout=KUBELET_DETECTION_S, what="KubeletUnhealthy=True")
    # The kubelet silent, the agent alive: the node lifecycle controller's Ready=Unknown is not a dark node.
    wait_until(lambda: mark("Ready=Unknown", status(core, "Ready") == "Unknown"), timeout=90, what="Ready=Unknown")
    silent = wait_until(lambda: mark("remediator: kubelet silent, agent alive", silent_node(remediator)),
                        timeout=30, what="the remediator's view of the silent node")
    assert silent["seen"] == "kubelet-silent" and "its agent wrote at" in silent["why"], silent
    refused = kubectl_nodemedic(cluster, "fence", realnode.NAME, "--confirm", "--agent-silence", "30s")
    print(f"\nkubectl nodemedic fence {realnode.NAME} --confirm (the kubelet silent, the agent alive): exit "
          f"{refused.returncode}: {refused.stderr.strip()}")
    assert refused.returncode == 2 and "the machine runs" in refused.stderr, refused.stderr
    assert OUT_OF_SERVICE_KEY not in taint_keys(core, realnode.NAME)
    wait_until(lambda: mark("taint", "nodemedic.io/kubelet-unhealthy" in taint_keys(core, realnode.NAME)),
               timeout=120, what="the kubelet-unhealthy taint")
    asked = wait_until(lambda: mark("restart asked", ladder(core, realnode.NAME)), timeout=30,
                       what="the ladder's restart asked for")
    assert (asked["action"], asked["service"]) == ("restart", "kubelet"), asked
    done = wait_until(lambda: mark("agent: Done", (a := answer(core, realnode.NAME)) is not None
                                   and a.reason == "Done" and a), timeout=120, what="the agent's Done answer")
    assert done.message.startswith(f"request {asked['id']}: restarted kubelet"), done.message
    wait_until(lambda: mark("Ready", status(core, "Ready") == "True"), timeout=60, what="the node Ready")
    wait_until(lambda: mark("KubeletUnhealthy=False", status(core, "KubeletUnhealthy") == "False"), timeout=60,
               what="KubeletUnhealthy=False again")
    wait_until(lambda: mark("ladder ended", ladder(core, realnode.NAME) is None), timeout=30,
               what="the ladder ended (its annotation gone)")
    wait_until(lambda: mark("taint removed", "nodemedic.io/kubelet-unhealthy" not in taint_keys(core, realnode.NAME)),
               timeout=30, what="the taint removed")
    cluster.owned.load()
    kubelet = next(p for p in cluster.owned.processes if p.name == "kubelet")
    print("\nthe kubelet stopped; seconds after:")
    for what, t in marks.items():
        print(f"  {t:6.1f}  {what}")
    print(f"the agent's answer: {done.reason}: {done.message}\nthe kubelet now runs as pid {kubelet.pid} "
          f"(started by the agent through hack/cluster node-service)")
    repaired = [e for e in nodemedic_events(core, "default", "NodemedicRepaired") if e.involved_object.name ==
                realnode.NAME]
    assert repaired and "after restart kubelet" in repaired[-1].message, [e.message for e in repaired]
    assert remediator.metric("nodemedic_repair_steps_finished_total", action="restart", result="repaired") == 1
    assert remediator.metric("nodemedic_fences_total") == 0 and OUT_OF_SERVICE_KEY not in taint_keys(core,
                                                                                                    realnode.NAME)


def test_a_pending_reboot_climbs_the_ladder_to_a_reboot_after_the_drain(
        repairing: tuple[LocalCluster, RemediatorProcess]) -> None:
    cluster, remediator = repairing
    assert cluster.owned is not None
    core, apps = client.CoreV1Api(cluster.api), client.AppsV1Api(cluster.api)
    namespace = new_namespace(core, f"work-{secrets.token_hex(3)}")
    work = deployment("work", 1, [realnode.NAME, *KWOK_NODES])
    work["spec"]["template"]["spec"]["containers"][0].update(image=image.pause_reference(), imagePullPolicy="Never")
    cordon(core, KWOK_NODES, True)
    try:
        apps.create_namespaced_deployment(namespace, work)
        placed = wait_until(lambda: (r := running_on(core, namespace, "work")) and r, timeout=120,
                            what="the work pod Running on the real node")
    finally:
        cordon(core, KWOK_NODES, False)
    assert set(placed.values()) == {realnode.NAME}
    boot_before = BOOT_ID.read_text().strip()
    t0 = time.monotonic()
    mark = Moments(t0)
    marks = mark.at

    REBOOT_REQUIRED.write_text("*** System restart required ***\n")  # as Debian's update-notifier leaves it
    wait_until(lambda: mark("RebootRequired=True", status(core, "RebootRequired") == "True"), timeout=60,
               what="RebootRequired=True from the agent's plugin monitor")
    restart = wait_until(lambda: mark("restart asked", (s := ladder(core, realnode.NAME)) and s), timeout=60,
                         what="the ladder's first step")
    assert restart["action"] == "restart", restart
    reboot = wait_until(lambda: mark("reboot asked", (s := ladder(core, realnode.NAME)) and s["action"] == "reboot"
                                     and s), timeout=150, what="the reboot asked for, after the restart's wait")
    assert reboot["history"][0]["result"].startswith("RebootRequired=True"), reboot
    moved = running_on(core, namespace, "work")
    assert moved and realnode.NAME not in moved.values(), f"the reboot started before the drain: {moved}"
    evicted = [e for e in nodemedic_events(core, namespace, "NodemedicEvicted")]
    assert [e.involved_object.name for e in evicted] == list(placed), "the work pod was not evicted (PDB-safe)"
    wait_until(lambda: mark("boot id changed", BOOT_ID.read_text().strip() != boot_before), timeout=120,
               what="the node rebooted (a new boot id)")

    def back() -> bool:
        ready = status(core, "Ready") == "True"
        mark("NotReady", not ready)  # seen only if the node stays down longer than a poll
        return ready and (agent := agent_pod(core)) is not None and bool(agent.status.container_statuses) \
            and agent.status.container_statuses[0].ready and bool(mark("Ready, the agent pod running again", True))

    wait_until(back, timeout=180, what="the node Ready again, its agent pod running", interval=0.5)
    done = wait_until(lambda: mark("agent: Done", (a := answer(core, realnode.NAME)) is not None and a.reason
                                   == "Done" and a.message.startswith(f"request {reboot['id']}") and a),
                      timeout=180, what="the restarted agent proving the reboot")
    boot_after = BOOT_ID.read_text().strip()
    assert f"rebooted: boot id {boot_before} -> {boot_after}" in done.message, done.message
    wait_until(lambda: mark("RebootRequired=False", status(core, "RebootRequired") == "False"), timeout=60,
               what="RebootRequired=False (a reboot clears /run)")
    wait_until(lambda: mark("ladder ended", ladder(core, realnode.NAME) is None), timeout=60, what="the ladder ended")
    wait_until(lambda: mark("taint removed", "nodemedic.io/reboot-required" not in taint_keys(core, realnode.NAME)),
               timeout=60, what="the taint removed")
    agent = agent_pod(core)
    assert agent is not None and agent.status.container_statuses[0].restart_count >= 1
    print(f"\n/run/reboot-required written; seconds after (boot id {boot_before} -> {boot_after}):")
    for what, t in sorted(marks.items(), key=lambda kv: kv[1]):
        print(f"  {t:6.1f}  {what}")
    print(f"the agent's answer: {done.reason}: {done.message}")
    assert remediator.metric("nodemedic_repair_steps_finished_total", action="reboot", result="repaired") == 1
    core.delete_namespace(namespace)


def test_the_repair_annotation_from_anyone_but_the_remediator_is_refused(
        repairing: tuple[LocalCluster, RemediatorProcess]) -> None:
    cluster, _ = repairing
    ask = json.dumps({"id": "1-0", "rule": "x", "step": 1, "action": "reboot",
                      "requested": "2026-11-28T00:00:00Z", "started": "2026-11-28T00:00:00Z"})
    done = kubectl(cluster, "annotate", "node", realnode.NAME, f"{REPAIR}={ask}")
    print(f"\nkubectl annotate node {realnode.NAME} {REPAIR}=... as cluster-admin: exit {done.returncode}\n"
          f"{done.stderr.strip()}")
    assert done.returncode != 0
    assert "only the nodemedic remediator" in done.stderr and "may write the annotation nodemedic.io/repair" \
        in done.stderr, done.stderr
    core = client.CoreV1Api(cluster.api)
    with pytest.raises(ApiException) as refused:
        core.patch_node(realnode.NAME, {"metadata": {"annotations": {REPAIR: ask}}})
    assert refused.value.status in (403, 422), refused.value
    assert ladder(core, realnode.NAME) is None
    # A person's own say is allowed: the hold annotation, through the same API.
    core.patch_node(realnode.NAME, {"metadata": {"annotations": {"nodemedic.io/repair-hold": "e2e"}}})
    core.patch_node(realnode.NAME, {"metadata": {"annotations": {"nodemedic.io/repair-hold": None}}})


def statefulset(name: str, nodes: list[str], toleration_seconds: int) -> dict:
    """One replica of the pause image; its pod tolerates the unreachable and not-ready taints `toleration_seconds`
    (Kubernetes' default is 300 s: shortened, the same behaviour, sooner)."""
    labels = {"app": name}
    tolerations = [{"key": f"node.kubernetes.io/{k}", "operator": "Exists", "effect": "NoExecute",
                    "tolerationSeconds": toleration_seconds} for k in ("unreachable", "not-ready")]
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name, "labels": labels},
            "spec": {"replicas": 1, "serviceName": name, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {
                         "containers": [{"name": "db", "image": image.pause_reference(), "imagePullPolicy": "Never",
                                         "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}],
                         "terminationGracePeriodSeconds": 5, "tolerations": tolerations,
                         "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                             "nodeSelectorTerms": [{"matchExpressions": [{"key": "kubernetes.io/hostname",
                                                                         "operator": "In", "values": nodes}]}]}}}}}}}


def test_a_dark_node_keeps_its_statefulset_pod_until_a_person_confirms_it_off(
        repairing: tuple[LocalCluster, RemediatorProcess], tmp_path: Path) -> None:
    cluster, remediator = repairing
    assert cluster.owned is not None
    core, apps = client.CoreV1Api(cluster.api), client.AppsV1Api(cluster.api)
    namespace = new_namespace(core, f"dark-{secrets.token_hex(3)}")
    toleration = 10
    cordon(core, KWOK_NODES, True)
    try:
        apps.create_namespaced_stateful_set(namespace, statefulset("db", [realnode.NAME, *KWOK_NODES], toleration))
        placed = wait_until(lambda: (r := running_on(core, namespace, "db")) and r, timeout=120,
                            what="db-0 Running on the real node")
    finally:
        cordon(core, KWOK_NODES, False)
    assert placed == {"db-0": realnode.NAME}, placed
    uid = core.read_namespaced_pod("db-0", namespace).metadata.uid
    power_button = tmp_path / "power-on"
    fences_before = remediator.metric("nodemedic_fences_total", evidence="person")
    t0 = time.monotonic()
    mark = Moments(t0)
    marks = mark.at

    def db0() -> client.V1Pod | None:
        try:
            return core.read_namespaced_pod("db-0", namespace)
        except ApiException as e:
            if e.status == 404:
                return None
            raise

    # Dark as a dead machine is: every service and container of the node stopped, the agent's included, until the
    # test presses the power button.
    down = subprocess.run([sys.executable, str(ROOT / "hack" / "cluster"), "node-reboot", "--state-dir",
                           str(cluster.owned.state_dir), "--boot-id-file", str(BOOT_ID), "--off-seconds", "900",
                           "--power-button", str(power_button), "--delay", "0"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert down.returncode == 0, down.stderr
    try:
        wait_until(lambda: mark("Ready=Unknown", status(core, "Ready") == "Unknown"), timeout=120,
                   what="Ready=Unknown (node-monitor-grace-period 40 s)")
        dark = wait_until(lambda: mark("remediator: dark, no evidence", (n := silent_node(remediator))
                                       and n["seen"] == "dark" and n), timeout=90, what="the node dark")
        assert dark.get("needsEvidence") and f"kubectl nodemedic fence {realnode.NAME} --confirm" in dark["why"], dark
        told = wait_until(lambda: [e for e in nodemedic_events(core, "default", "NodemedicDarkNode")
                                   if e.involved_object.name == realnode.NAME], timeout=30,
                          what="the NodemedicDarkNode Event")
        assert remediator.metric("nodemedic_dark_node_needs_evidence", node=realnode.NAME) == 1
        # Kubernetes alone: the taint manager evicts the pod after its toleration; with no kubelet to confirm it,
        # it stays Terminating, and the StatefulSet makes no second db-0.
        wait_until(lambda: mark("db-0 Terminating", (p := db0()) is not None and p.metadata.deletion_timestamp),
                   timeout=120, what="db-0 evicted by the taint manager (Terminating)")
        margin = 30.0
        settled = marks["db-0 Terminating"] + margin
        wait_until(lambda: time.monotonic() - t0 >= settled or ((p := db0()) is None or p.metadata.uid != uid),
                   timeout=margin + 10, what="the margin after the eviction")
        alone = db0()
        assert alone is not None and alone.metadata.uid == uid and alone.metadata.deletion_timestamp is not None
        print(f"\nKubernetes alone, {time.monotonic() - t0:.0f} s after the node went dark ({toleration} s "
              f"toleration + {margin:.0f} s): db-0 phase={alone.status.phase}, Terminating since "
              f"{alone.metadata.deletion_timestamp:%H:%M:%S}, on {alone.spec.node_name}; no replacement")
        assert OUT_OF_SERVICE_KEY not in taint_keys(core, realnode.NAME)
        # A person who knows the machine is off says so.
        confirmed = kubectl_nodemedic(cluster, "fence", realnode.NAME, "--confirm", "--agent-silence", "30s")
        assert confirmed.returncode == 0, confirmed.stderr
        mark("fence --confirm", True)
        print(confirmed.stdout.strip())
        wait_until(lambda: mark("out-of-service taint", OUT_OF_SERVICE_KEY in taint_keys(core, realnode.NAME)),
                   timeout=30, what="the out-of-service taint")
        moved = wait_until(lambda: mark("db-0 Running elsewhere", (p := db0()) is not None and p.metadata.uid != uid
                                        and p.status.phase == "Running" and p.spec.node_name != realnode.NAME and p),
                           timeout=120, what="a new db-0 Running on another node")
        node = core.read_node(realnode.NAME)
        assert "evidence\":\"person" in node.metadata.annotations[FENCE_ANNOTATION], node.metadata.annotations
        assert remediator.metric("nodemedic_fences_total", evidence="person") == fences_before + 1
    finally:
        power_button.write_text("on\n")
    mark("power on", True)

    def back() -> bool:
        ready = status(core, "Ready") == "True"
        return ready and (agent := agent_pod(core)) is not None and bool(agent.status.container_statuses) \
            and agent.status.container_statuses[0].ready and bool(mark("Ready, the agent pod running again", True))

    wait_until(back, timeout=240, what="the node Ready again, its agent running", interval=0.5)
    wait_until(lambda: mark("out-of-service taint removed", OUT_OF_SERVICE_KEY not in taint_keys(core, realnode.NAME)),
               timeout=90, what="the out-of-service taint removed")
    node = core.read_node(realnode.NAME)
    annotations = node.metadata.annotations or {}
    assert FENCE_ANNOTATION not in annotations and CONFIRM_ANNOTATION not in annotations, annotations
    # The Event is written after the taint's removal returns (and retried if refused): it may land after the node
    # shows the taint gone (CI read none at that moment once).
    unfenced = wait_until(lambda: [e for e in nodemedic_events(core, "default", "NodemedicUnfenced")
                                   if e.involved_object.name == realnode.NAME], timeout=30,
                          what="the NodemedicUnfenced Event on the node")
    assert "its agent reported at" in unfenced[-1].message, [e.message for e in unfenced]
    assert running_on(core, namespace, "db") == {"db-0": moved.spec.node_name}  # the old copy never came back
    print(f"the NodemedicDarkNode Event: {told[-1].message}")
    print(f"the NodemedicUnfenced Event: {unfenced[-1].message}")
    print(f"the node went dark; seconds after (db-0 moved to {moved.spec.node_name}):")
    for what, t in sorted(marks.items(), key=lambda kv: kv[1]):
        print(f"  {t:6.1f}  {what}")
    core.delete_namespace(namespace)
