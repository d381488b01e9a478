"""The chart installs where the API server limits the system-* priority classes as GKE's does (a control plane of
its own whose ResourceQuota admission has GKE's `limitedResources`, conftest.GKE_PRIORITY_CLASS_LIMIT): without the
chart's ResourceQuota the agent's and the remediator's pods are refused, with it they run. What NOTES.txt tells
a user of a release not called nodemedic, in CronJob mode, names objects that exist and a command that works. And
a member of a group in rbac.viewerGroups may read what the kubectl plugin shows, and change nothing."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import time
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from hack import manifests  # the pinned helm and its state directories
from hack.kcp import paths
from tests.e2e.conftest import LocalCluster
from tests.e2e.helm_cli import helm
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e

REFUSAL = ("insufficient quota to match these scopes: "
           "[{PriorityClass In [system-node-critical system-cluster-critical]}]")


def kubectl(cluster: LocalCluster, argv: list[str]) -> str:
    binary = paths.binary("kubectl")
    if not binary.exists():
        pytest.fail(f"kubectl is not built ({binary} missing): run `make build`", pytrace=False)
    proc = subprocess.run([str(binary), f"--kubeconfig={cluster.kubeconfig}", *argv], capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 0, f"kubectl {shlex.join(argv)} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}"
    return proc.stdout


def probe_pod(template: client.V1PodTemplateSpec, api: client.ApiClient, name: str) -> dict[str, Any]:
    """A pod exactly as the controller would make it from `template` (its priority class included)."""
    pod: dict[str, Any] = api.sanitize_for_serialization(template)
    pod["metadata"] = {"name": name, "labels": {"nodemedic.io/e2e": "probe"}}
    return pod


def failed_creates(core: client.CoreV1Api, namespace: str, kind: str) -> list[str]:
    return [e.message for e in core.list_namespaced_event(namespace).items
            if e.reason == "FailedCreate" and e.involved_object.kind == kind]


def test_gke_refuses_the_chart_s_pods_without_its_priority_class_quota_and_admits_them_with_it(
    gke_priority_cluster: LocalCluster,
) -> None:
    cluster = gke_priority_cluster
    core, apps = client.CoreV1Api(cluster.api), client.AppsV1Api(cluster.api)
    chart = str(manifests.CHART)

    # Without the quota (priorityClassQuota.create=false): the install "succeeds", and no pod ever starts.
    bare, bare_ns = "bare", "nodemedic-no-quota"
    helm(cluster, "install", bare, chart, "-n", bare_ns, "--create-namespace", "--set",
         "priorityClassQuota.create=false,agent.port=20261")
    assert core.list_namespaced_resource_quota(bare_ns).items == []
    ds = apps.read_namespaced_daemon_set(f"{bare}-nodemedic-agent", bare_ns)
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_pod(bare_ns, probe_pod(ds.spec.template, cluster.api, "agent-probe"), dry_run="All")
    body = json.loads(refused.value.body)
    print(f"\nwithout the quota, the API server answers {refused.value.status}: {body['message']}")
    # The ResourceQuota admission plugin's own error, not a Forbidden: a 500 with exactly GKE's message.
    assert (refused.value.status, body["message"]) == (500, REFUSAL)
    # ... and that is what the DaemonSet and the remediator's ReplicaSet get for every pod they try.
    for kind in ("DaemonSet", "ReplicaSet"):
        (first, *_) = wait_until(lambda kind=kind: failed_creates(core, bare_ns, kind), timeout=30,
                                 what=f"the {kind}'s FailedCreate Event")
        print(f"{kind} FailedCreate: {first}")
        assert first == f"Error creating: {REFUSAL}"
    assert core.list_namespaced_pod(bare_ns).items == []
    assert apps.read_namespaced_daemon_set_status(f"{bare}-nodemedic-agent", bare_ns).status \
        .current_number_scheduled == 0

    # With the chart's default (priorityClassQuota.create=true): the same chart's pods run.
    release, ns = "gke", "nodemedic-gke"
    helm(cluster, "install", release, chart, "-n", ns, "--create-namespace", "--set", "agent.port=20262",
         "--wait", "--timeout=90s")
    (quota,) = core.list_namespaced_resource_quota(ns).items
    assert quota.metadata.name == f"{release}-nodemedic-critical-pods"
    (scope,) = quota.spec.scope_selector.match_expressions
    assert (scope.scope_name, scope.operator, scope.values) == (
        "PriorityClass", "In", ["system-node-critical", "system-cluster-critical"])
    pods = core.list_namespaced_pod(ns).items
    running = sorted((p.metadata.labels["app.kubernetes.io/component"], p.spec.priority_class_name)
                     for p in pods if p.status.phase == "Running")
    print(f"with ResourceQuota {quota.metadata.name}: {len(running)} pods Running: {running}")
    assert running == [("agent", "system-node-critical"), ("remediator", "system-cluster-critical"),
                       ("remediator", "system-cluster-critical")]
    assert failed_creates(core, ns, "DaemonSet") == []
    wait_until(lambda: (core.read_namespaced_resource_quota(quota.metadata.name, ns).status.used or {})
               .get("pods") == "3", timeout=30, what="the quota to count the agent and the two remediators")
    ds = apps.read_namespaced_daemon_set(f"{release}-nodemedic-agent", ns)
    admitted = core.create_namespaced_pod(ns, probe_pod(ds.spec.template, cluster.api, "agent-probe"),
                                          dry_run="All")
    assert admitted.spec.priority_class_name == "system-node-critical"


def notes_of(install_output: str) -> str:
    assert "NOTES:" in install_output, install_output
    return install_output.split("NOTES:", 1)[1]


def test_the_notes_of_a_cronjob_release_with_another_name_name_objects_that_exist_and_a_run_that_starts(
    gke_priority_cluster: LocalCluster,
) -> None:
    cluster = gke_priority_cluster
    core, batch = client.CoreV1Api(cluster.api), client.BatchV1Api(cluster.api)
    release, ns, base = "ops-healer", "healing", "ops-healer-nodemedic"
    out = helm(cluster, "install", release, str(manifests.CHART), "-n", ns, "--create-namespace", "--set",
               "remediator.mode=cronjob,agent.port=20263", "--wait", "--timeout=90s")
    notes = notes_of(out)
    print(f"\nNOTES of {release} (cronjob mode):{notes}")
    assert "nodemedic-remediator" not in notes.replace(f"{base}-remediator", "")  # no other release's names
    assert "No Deployment, no Lease" in notes
    assert not re.search(r"\b(deployment|lease)/", notes), "no Deployment or Lease exists in CronJob mode"

    # Every `kubectl ... get` line of the NOTES, run as written: each object it names exists.
    job_name = f"{base}-remediator-{int(time.time())}"
    commands = [shlex.split(line.replace("$(date +%s)", job_name.rsplit("-", 1)[1]).split("|")[0])
                for line in notes.splitlines() if line.strip().startswith("kubectl ")]
    gets = [c[1:] for c in commands if "get" in c[1:4]]
    named = {a for c in gets for a in c if re.fullmatch(r"[a-z]+/[-a-z0-9.]+", a)}
    assert named == {f"daemonset/{base}-agent", f"configmap/{base}-agent", f"cronjob/{base}-remediator",
                     f"configmap/{base}-remediator", f"resourcequota/{base}-critical-pods"}, named
    for argv in gets:
        kubectl(cluster, argv)

    # The run it says how to start: a Job from the CronJob, whose pod (system-cluster-critical) the quota admits.
    (create,) = [c[1:] for c in commands if c[1:4] == ["-n", ns, "create"]]
    assert create == ["-n", ns, "create", "job", f"--from=cronjob/{base}-remediator", job_name], create
    kubectl(cluster, create)
    job = batch.read_namespaced_job(job_name, ns)
    assert job.metadata.labels["app.kubernetes.io/instance"] == release
    listed = kubectl(cluster, [*next(c for c in gets if "jobs" in c), "-o", "name"])
    assert f"job.batch/{job_name}" in listed.split()
    pod = wait_until(lambda: next(iter(core.list_namespaced_pod(ns, label_selector=f"job-name={job_name}").items),
                                  None), timeout=30, what=f"the pod of Job {job_name}")
    assert pod.spec.priority_class_name == "system-cluster-critical"
    assert failed_creates(core, ns, "Job") == []


# (verb, "group/resource[/subresource]", namespace, name, allowed) for a member of a group in rbac.viewerGroups.
VIEWS = "viewing"
VIEWER = [
    ("get", "/nodes", "", "kwok-node-0", True),
    ("list", "/nodes", "", "", True),
    ("watch", "/nodes", "", "", True),
    ("list", "/pods", "", "", True),  # every namespace: the pods of one node
    ("get", "/pods", "kube-system", "etcd-0", True),
    ("list", "policy/poddisruptionbudgets", "", "", True),
    ("get", "coordination.k8s.io/leases", VIEWS, "view-nodemedic-remediator", True),
    ("get", "/pods", VIEWS, "view-nodemedic-remediator-abc", True),
    ("get", "/pods/proxy", VIEWS, "view-nodemedic-remediator-abc", True),  # GET .../pods/POD:8080/proxy/plan
    ("patch", "/nodes", "", "kwok-node-0", False),
    ("patch", "/nodes/status", "", "kwok-node-0", False),
    ("delete", "/pods", VIEWS, "view-nodemedic-remediator-abc", False),
    ("create", "/pods/eviction", "default", "web-1", False),
    ("create", "/pods/proxy", VIEWS, "view-nodemedic-remediator-abc", False),  # a POST through the proxy
    ("get", "/pods/proxy", "default", "web-1", False),  # the proxy only in the release namespace
    ("create", "/pods/exec", VIEWS, "view-nodemedic-remediator-abc", False),
    ("get", "/pods/log", VIEWS, "view-nodemedic-remediator-abc", False),
    ("update", "coordination.k8s.io/leases", VIEWS, "view-nodemedic-remediator", False),
    ("get", "coordination.k8s.io/leases", "kube-system", "kube-scheduler", False),
    ("get", "/secrets", VIEWS, "anything", False),
    ("get", "/configmaps", VIEWS, "view-nodemedic-remediator", False),
    ("get", "/configmaps", VIEWS, "view-nodemedic-remediator-savings", True),  # kubectl nodemedic savings
    ("update", "/configmaps", VIEWS, "view-nodemedic-remediator-savings", False),
    ("delete", "policy/poddisruptionbudgets", "default", "web", False),
    ("list", "nodemedic.io/migrations", VIEWS, "", True),  # kubectl nodemedic migrations
    ("get", "nodemedic.io/migrations", VIEWS, "migration-0011aabb", True),
    ("patch", "nodemedic.io/migrations", VIEWS, "migration-0011aabb", False),  # approving is the approvers'
    ("patch", "nodemedic.io/migrations/status", VIEWS, "migration-0011aabb", False),
]
# kubectl nodemedic approve | reject: the approver group's grants, and nothing the remediator alone writes
APPROVER = [
    ("patch", "nodemedic.io/migrations", VIEWS, "migration-0011aabb", True),
    ("get", "nodemedic.io/migrations", VIEWS, "migration-0011aabb", True),
    ("create", "authentication.k8s.io/selfsubjectreviews", "", "", True),
    ("patch", "nodemedic.io/migrations/status", VIEWS, "migration-0011aabb", False),
    ("create", "nodemedic.io/migrations", VIEWS, "", False),
    ("patch", "nodemedic.io/migrations", "default", "migration-0011aabb", False),
]


def test_a_member_of_a_viewer_group_may_read_what_the_plugin_shows_and_change_nothing(
    gke_priority_cluster: LocalCluster,
) -> None:
    cluster = gke_priority_cluster
    helm(cluster, "install", "view", str(manifests.CHART), "-n", VIEWS, "--create-namespace", "--set",
         "rbac.viewerGroups={nodemedic-viewers},rbac.approverGroups={capacity},agent.port=20264")
    authz = client.AuthorizationV1Api(cluster.api)

    def allowed(groups: list[str], verb: str, resource: str, namespace: str, name: str) -> bool:
        group, _, rest = resource.partition("/")
        res, _, sub = rest.partition("/")
        review = authz.create_subject_access_review({
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": "alice", "groups": [*groups, "system:authenticated"], "resourceAttributes": {
                "verb": verb, "group": group, "resource": res, "subresource": sub, "namespace": namespace,
                "name": name}}})
        return bool(review.status.allowed)

    viewers = ["nodemedic-viewers"]
    wait_until(lambda: allowed(viewers, "get", "/pods/proxy", VIEWS, "x"), timeout=30,
               what="the viewer bindings in force")
    wrong = [(verb, resource, namespace, name, want) for verb, resource, namespace, name, want in VIEWER
             if allowed(viewers, verb, resource, namespace, name) is not want]
    assert wrong == [], f"the viewer group's grants differ from what the plugin needs: {wrong}"
    wrong = [(verb, resource, namespace, name, want) for verb, resource, namespace, name, want in APPROVER
             if allowed(["capacity"], verb, resource, namespace, name) is not want]
    assert wrong == [], f"the approver group's grants differ from what approve and reject need: {wrong}"
    # Someone outside the group is not helped by the chart.
    assert not allowed(["developers"], "get", "/nodes", "", "kwok-node-0")
    assert not allowed(["developers"], "get", "/pods/proxy", VIEWS, "x")
