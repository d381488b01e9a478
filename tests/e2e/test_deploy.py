"""deploy/manifests/nodemedic.yaml (rendered from the Helm chart) on the real control plane: it applies server-side,
its controllers create the agent on every node and two remediator replicas (kwok runs them as fake pods), the RBAC
grants exactly the calls the programs make, and the ValidatingAdmissionPolicy lets an agent's token write the
status of its own pod's node only. Finally both programs run as real processes with tokens of the chart's
ServiceAccounts and do their whole job: condition -> Event -> taint -> eviction, with no request refused."""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from agent.checks import BUILTIN
from hack import manifests  # the pinned helm and its state directories
from hack.kcp import paths
from tests.e2e.conftest import LocalCluster
from tests.e2e.fake_host import host_root
from tests.e2e.helm_cli import helm
from tests.e2e.remediator_harness import deployment, pods_of, start_remediator, taint_keys, wait_running
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]

# One xdist worker runs the whole module: its tests share the manifests installed once (module-scoped installed).
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("deploy")]

MANIFEST = ROOT / "deploy" / "manifests" / "nodemedic.yaml"
NS = "nodemedic"
AGENT = "nodemedic-agent"
REMEDIATOR = "nodemedic-remediator"
POLICY = "nodemedic-agent-own-node"
SELECTOR = "app.kubernetes.io/name=nodemedic,app.kubernetes.io/instance=nodemedic,app.kubernetes.io/component="
SMP = "application/strategic-merge-patch+json"
SYSTEM_NODE_CRITICAL, SYSTEM_CLUSTER_CRITICAL = 2000001000, 2000000000


# --- helpers ----------------------------------------------------------------------------------------
def kubectl(cluster: LocalCluster, *args: str, timeout: float = 180) -> str:
    binary = paths.binary("kubectl")
    if not binary.exists():
        pytest.fail(f"kubectl is not built ({binary} missing): run `make build`", pytrace=False)
    proc = subprocess.run([str(binary), f"--kubeconfig={cluster.kubeconfig}", *args], capture_output=True,
                          text=True, timeout=timeout, check=False)
    assert proc.returncode == 0, f"kubectl {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}"
    return proc.stdout


def manifest_objects() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d]


def live_pods(core: client.CoreV1Api, component: str) -> list[client.V1Pod]:
    return [p for p in core.list_namespaced_pod(NS, label_selector=SELECTOR + component).items
            if p.metadata.deletion_timestamp is None]


def agent_pod_on(core: client.CoreV1Api, node: str) -> client.V1Pod:
    return wait_until(lambda: next((p for p in live_pods(core, "agent")
                                    if p.spec.node_name == node and p.status.phase == "Running"), None),
                      timeout=60, what=f"the DaemonSet's agent pod Running on {node}")


def token(core: client.CoreV1Api, service_account: str, pod: client.V1Pod | None = None) -> str:
    """A TokenRequest for the ServiceAccount, bound to `pod` (as the kubelet gets it for the pod) or to nothing."""
    spec: dict[str, Any] = {"expirationSeconds": 3600}
    if pod is not None:
        spec["boundObjectRef"] = {"kind": "Pod", "apiVersion": "v1", "name": pod.metadata.name,
                                  "uid": pod.metadata.uid}
    return core.create_namespaced_service_account_token(service_account, NS, {"spec": spec}).status.token


def _admin_configuration(cluster: LocalCluster) -> client.Configuration:
    cfg = client.Configuration()
    config.load_kube_config(config_file=str(cluster.kubeconfig), client_configuration=cfg)
    return cfg


def token_client(cluster: LocalCluster, bearer: str) -> client.ApiClient:
    """A plain client that authenticates with the bearer token only (and trusts the cluster's CA)."""
    admin = _admin_configuration(cluster)
    cfg = client.Configuration(host=admin.host, api_key={"authorization": f"Bearer {bearer}"})
    cfg.ssl_ca_cert = admin.ssl_ca_cert
    return client.ApiClient(cfg)


def token_kubeconfig(cluster: LocalCluster, bearer: str, path: Path) -> Path:
    admin = _admin_configuration(cluster)
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "sa",
        "clusters": [{"name": "local", "cluster": {"server": admin.host, "certificate-authority": admin.ssl_ca_cert}}],
        "users": [{"name": "sa", "user": {"token": bearer}}],
        "contexts": [{"name": "sa", "context": {"cluster": "local", "user": "sa"}}],
    }))
    return path


def condition(core: client.CoreV1Api, node: str, type_: str) -> client.V1NodeCondition | None:
    return next((c for c in core.read_node_status(node).status.conditions or [] if c.type == type_), None)


def condition_patch(type_: str, status: str = "True") -> dict[str, Any]:
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"status": {"conditions": [{"type": type_, "status": status, "reason": "DeployE2E",
                                       "message": "written by tests/e2e/test_deploy.py",
                                       "lastHeartbeatTime": now, "lastTransitionTime": now}]}}


def refusal(call: Callable[[], object]) -> tuple[int, str]:
    """(HTTP status, message) of a request that must be refused."""
    with pytest.raises(ApiException) as e:
        call()
    return e.value.status, str(json.loads(e.value.body).get("message", e.value.body))


# --- the installation -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def installed(cluster: LocalCluster) -> Iterator[str]:
    """`kubectl apply --server-side` of the rendered manifests; afterwards everything is deleted and gone."""
    try:
        yield kubectl(cluster, "apply", "--server-side", "--field-manager=nodemedic-e2e", "-f", str(MANIFEST))
    finally:
        kubectl(cluster, "delete", "-f", str(MANIFEST), "--ignore-not-found", "--wait=false")
        # Agent pods on per-test nodes that are already deleted have no kwok to finish them: remove them now
        # rather than after the pod garbage collector's quarantine.
        kubectl(cluster, "delete", "pods", "--all", "-n", NS, "--grace-period=0", "--force", "--ignore-not-found")
        kubectl(cluster, "wait", "--for=delete", f"namespace/{NS}", "--timeout=120s")
        left = kubectl(cluster, "get", "-f", str(MANIFEST), "--ignore-not-found", "-o", "name")
        assert not left.strip(), f"left behind after the test:\n{left}"


def test_the_rendered_manifests_apply_server_side_and_every_object_is_on_the_server(
    installed: str, cluster: LocalCluster
) -> None:
    objects = manifest_objects()
    applied = [line for line in installed.splitlines() if line.endswith(" serverside-applied")]
    assert len(applied) == len(objects), installed
    live = json.loads(kubectl(cluster, "get", "-f", str(MANIFEST), "-o", "json", "--show-managed-fields"))["items"]
    assert sorted((o["kind"], o["metadata"]["name"]) for o in live) == sorted(
        (o["kind"], o["metadata"]["name"]) for o in objects)
    for o in live:
        managers = {(m["manager"], m["operation"]) for m in o["metadata"].get("managedFields") or []}
        assert ("nodemedic-e2e", "Apply") in managers, f"{o['kind']}/{o['metadata']['name']}: {managers}"


def test_the_agent_daemonset_runs_one_pod_on_every_kwok_node(
    installed: str, core: client.CoreV1Api, apps: client.AppsV1Api
) -> None:
    def one_per_node() -> list[client.V1Pod]:
        nodes = {n.metadata.name for n in core.list_node().items}
        pods = [p for p in live_pods(core, "agent") if p.status.phase == "Running"]
        per_node = Counter(p.spec.node_name for p in pods)
        assert set(per_node) == nodes and set(per_node.values()) == {1}, f"nodes {sorted(nodes)}, pods {per_node}"
        ds = apps.read_namespaced_daemon_set_status(AGENT, NS).status
        assert ds.desired_number_scheduled == ds.number_ready == len(nodes), ds
        return pods

    pods = wait_until(one_per_node, timeout=60, what="one Running agent pod on every node")
    kwok = {n.metadata.name for n in core.list_node().items
            if (n.metadata.annotations or {}).get("kwok.x-k8s.io/node") == "fake"}
    assert {p.spec.node_name for p in pods} <= kwok
    assert len(pods) >= 4  # the session's four kwok nodes, plus any a test added
    for p in pods:
        assert p.spec.service_account_name == AGENT and p.spec.host_network is True
        assert p.spec.priority == SYSTEM_NODE_CRITICAL
        assert [t.operator for t in p.spec.tolerations if t.key is None] == ["Exists"]


def test_the_remediator_deployment_runs_two_pods_guarded_by_a_pdb(
    installed: str, core: client.CoreV1Api, apps: client.AppsV1Api, policy_api: client.PolicyV1Api
) -> None:
    wait_until(lambda: apps.read_namespaced_deployment_status(REMEDIATOR, NS).status.ready_replicas == 2,
               timeout=60, what="2 ready remediator replicas")
    pods = [p for p in live_pods(core, "remediator") if p.status.phase == "Running"]
    assert len(pods) == 2
    for p in pods:
        assert p.spec.service_account_name == REMEDIATOR and p.spec.priority == SYSTEM_CLUSTER_CRITICAL
        assert p.spec.security_context.run_as_non_root is True
    pdb = wait_until(lambda: (s := policy_api.read_namespaced_pod_disruption_budget(REMEDIATOR, NS).status)
                     and s.current_healthy == 2 and s,
                     timeout=60, what="the disruption controller to count 2 healthy remediators")
    assert pdb.disruptions_allowed == 1


# --- RBAC ---------------------------------------------------------------------------------------------
# (who, verb, "group/resource[/subresource]", namespace, name, allowed). Everything the programs call is allowed;
# a selection of everything else, the dangerous first, is denied.
MATRIX = [
    # the agent: its Node, the Node's status, Events in "default"
    (AGENT, "get", "/nodes", "", "kwok-node-0", True),
    (AGENT, "patch", "/nodes/status", "", "kwok-node-0", True),
    (AGENT, "create", "/events", "default", "", True),
    (AGENT, "patch", "/events", "default", "kwok-node-0.0123456789abcdef", True),
    (AGENT, "patch", "/nodes", "", "kwok-node-0", False),  # spec: taints, unschedulable
    (AGENT, "update", "/nodes", "", "kwok-node-0", False),
    (AGENT, "update", "/nodes/status", "", "kwok-node-0", False),
    (AGENT, "delete", "/nodes", "", "kwok-node-0", False),
    (AGENT, "create", "/nodes", "", "", False),
    (AGENT, "list", "/nodes", "", "", True),  # the repair ask of its own Node (fieldSelector metadata.name)
    (AGENT, "watch", "/nodes", "", "", True),
    (AGENT, "get", "/secrets", NS, "anything", False),
    (AGENT, "list", "/secrets", "", "", False),
    (AGENT, "list", "/pods", "", "", True),  # the stuckPods check's watch (fieldSelector spec.nodeName)
    (AGENT, "watch", "/pods", "", "", True),
    (AGENT, "patch", "/pods", "default", "web-1", False),
    (AGENT, "delete", "/pods", "default", "web-1", False),
    (AGENT, "create", "/pods/eviction", "default", "web-1", False),
    (AGENT, "create", "/events", "kube-system", "", False),
    (AGENT, "create", "/events", NS, "", False),
    (AGENT, "create", "events.k8s.io/events", "default", "", False),
    (AGENT, "create", "/serviceaccounts/token", NS, AGENT, False),
    (AGENT, "get", "/configmaps", NS, AGENT, False),
    (AGENT, "create", "coordination.k8s.io/leases", NS, "", False),
    # the remediator: watch the cluster, taint Nodes, evict Pods, Events, its Lease in its own namespace
    (REMEDIATOR, "get", "/nodes", "", "kwok-node-0", True),
    (REMEDIATOR, "list", "/nodes", "", "", True),
    (REMEDIATOR, "watch", "/nodes", "", "", True),
    (REMEDIATOR, "patch", "/nodes", "", "kwok-node-0", True),
    (REMEDIATOR, "list", "/pods", "", "", True),
    (REMEDIATOR, "watch", "/pods", "", "", True),
    (REMEDIATOR, "list", "/persistentvolumeclaims", "", "", True),
    (REMEDIATOR, "watch", "/persistentvolumeclaims", "", "", True),
    (REMEDIATOR, "create", "/pods/eviction", "default", "web-1", True),
    (REMEDIATOR, "create", "/pods/eviction", "team-a", "db-0", True),
    (REMEDIATOR, "list", "policy/poddisruptionbudgets", "", "", True),
    (REMEDIATOR, "watch", "policy/poddisruptionbudgets", "", "", True),
    (REMEDIATOR, "list", "scheduling.k8s.io/priorityclasses", "", "", True),
    (REMEDIATOR, "watch", "scheduling.k8s.io/priorityclasses", "", "", True),
    (REMEDIATOR, "create", "/events", "default", "", True),
    (REMEDIATOR, "create", "/events", "team-a", "", True),
    (REMEDIATOR, "create", "coordination.k8s.io/leases", NS, "", True),
    (REMEDIATOR, "get", "coordination.k8s.io/leases", NS, "nodemedic-remediator", True),
    (REMEDIATOR, "update", "coordination.k8s.io/leases", NS, "nodemedic-remediator", True),
    (REMEDIATOR, "delete", "/nodes", "", "kwok-node-0", False),
    (REMEDIATOR, "create", "/nodes", "", "", False),
    (REMEDIATOR, "update", "/nodes", "", "kwok-node-0", False),
    (REMEDIATOR, "patch", "/nodes/status", "", "kwok-node-0", False),
    (REMEDIATOR, "delete", "/pods", "default", "web-1", False),
    (REMEDIATOR, "create", "/pods", "default", "", False),
    (REMEDIATOR, "patch", "/pods", "default", "web-1", False),
    (REMEDIATOR, "patch", "/pods/status", "default", "web-1", False),  # the default policy: no MakeRoomForPendingPods
    (REMEDIATOR, "get", "/pods", "default", "web-1", False),
    (REMEDIATOR, "create", "/pods/exec", "default", "web-1", False),
    (REMEDIATOR, "get", "/secrets", NS, "anything", False),
    (REMEDIATOR, "list", "/secrets", "", "", False),
    (REMEDIATOR, "update", "/configmaps", NS, REMEDIATOR, False),  # cannot rewrite its own policy
    # its savings ledger (control/savings.py): read and written by name, created (RBAC cannot limit create by name)
    (REMEDIATOR, "get", "/configmaps", NS, f"{REMEDIATOR}-savings", True),
    (REMEDIATOR, "update", "/configmaps", NS, f"{REMEDIATOR}-savings", True),
    (REMEDIATOR, "create", "/configmaps", NS, "", True),
    (REMEDIATOR, "create", "/configmaps", "default", "", False),
    (REMEDIATOR, "delete", "/configmaps", NS, f"{REMEDIATOR}-savings", False),
    (REMEDIATOR, "patch", "/events", "default", "x", False),
    (REMEDIATOR, "delete", "policy/poddisruptionbudgets", "default", "web", False),
    (REMEDIATOR, "create", "coordination.k8s.io/leases", "kube-system", "", False),
    (REMEDIATOR, "create", "coordination.k8s.io/leases", "default", "", False),
    (REMEDIATOR, "update", "coordination.k8s.io/leases", "kube-system", "nodemedic-remediator", False),
    (REMEDIATOR, "get", "coordination.k8s.io/leases", NS, "someone-elses-lease", False),
    (REMEDIATOR, "update", "coordination.k8s.io/leases", NS, "someone-elses-lease", False),
    (REMEDIATOR, "delete", "coordination.k8s.io/leases", NS, "nodemedic-remediator", False),
    (REMEDIATOR, "create", "rbac.authorization.k8s.io/clusterrolebindings", "", "", False),
    # the engines' migrations (control/migrations.py): proposed, listed, their status written, deleted when old; a
    # person's decision (the spec) is never the remediator's to write
    (REMEDIATOR, "list", "nodemedic.io/migrations", NS, "", True),
    (REMEDIATOR, "create", "nodemedic.io/migrations", NS, "", True),
    (REMEDIATOR, "patch", "nodemedic.io/migrations/status", NS, "migration-0011aabb", True),
    (REMEDIATOR, "delete", "nodemedic.io/migrations", NS, "migration-0011aabb", True),
    (REMEDIATOR, "patch", "nodemedic.io/migrations", NS, "migration-0011aabb", False),
    (REMEDIATOR, "create", "nodemedic.io/migrations", "default", "", False),
    (REMEDIATOR, "create", "nodemedic.io/landings", NS, "", True),
    (REMEDIATOR, "create", "nodemedic.io/landings", "default", "", False),
]


@pytest.mark.parametrize(("who", "verb", "resource", "namespace", "name", "allowed"), MATRIX,
                         ids=[f"{w.removeprefix('nodemedic-')}-{'may' if a else 'may-not'}-{v}-{r.strip('/')}"
                              f"{'-in-' + n if n else ''}{'-' + nm if nm else ''}" for w, v, r, n, nm, a in MATRIX])
def test_rbac_allows_exactly_what_each_program_calls(
    installed: str, cluster: LocalCluster, who: str, verb: str, resource: str, namespace: str, name: str,
    allowed: bool,
) -> None:
    group, _, rest = resource.partition("/")
    res, _, sub = rest.partition("/")
    attrs = {"verb": verb, "group": group, "resource": res, "subresource": sub, "namespace": namespace, "name": name}
    review = client.AuthorizationV1Api(cluster.api).create_subject_access_review({
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": f"system:serviceaccount:{NS}:{who}",
                 "groups": ["system:serviceaccounts", f"system:serviceaccounts:{NS}", "system:authenticated"],
                 "resourceAttributes": attrs}})
    assert review.status.allowed is allowed, f"{who} {verb} {resource} {namespace}/{name}: {review.status}"


# --- the node-scoped agent ----------------------------------------------------------------------------
def test_an_agent_token_bound_to_a_pod_on_node_a_writes_a_status_and_is_refused_on_node_b(
    installed: str, cluster: LocalCluster, core: client.CoreV1Api, node_pool: Callable[..., list[str]]
) -> None:
    a, b = node_pool(2)
    own = token(core, AGENT, agent_pod_on(core, a))
    api = token_client(cluster, own)
    agent = client.CoreV1Api(api)
    me = client.AuthenticationV1Api(api).create_self_subject_review(
        {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}).status.user_info
    assert me.username == f"system:serviceaccount:{NS}:{AGENT}"
    assert me.extra["authentication.kubernetes.io/node-name"] == [a], me.extra

    def refused_on_b() -> str:  # the policy is enforced once kube-apiserver's admission has loaded it
        try:
            agent.patch_node_status(b, condition_patch("NodemedicDeployE2E"), dry_run="All", _content_type=SMP)
        except ApiException as e:
            if e.status == 403 and POLICY in e.body:
                return e.body
            raise
        return ""

    wait_until(refused_on_b, timeout=30, what=f"the ValidatingAdmissionPolicy {POLICY} in force")

    agent.patch_node_status(a, condition_patch("NodemedicDeployE2E"), _content_type=SMP)
    assert condition(core, a, "NodemedicDeployE2E").status == "True"

    status, message = refusal(lambda: agent.patch_node_status(b, condition_patch("NodemedicDeployE2E"),
                                                              _content_type=SMP))
    assert status == 403
    assert f"ValidatingAdmissionPolicy '{POLICY}' with binding '{POLICY}' denied request" in message
    assert f"bound to a pod on node {a}, not node {b}" in message
    assert condition(core, b, "NodemedicDeployE2E") is None

    # nodes/status would take label and annotation changes too: the policy keeps the agent to the status.
    status, message = refusal(lambda: agent.patch_node_status(a, {"metadata": {"labels": {"role": "db"}}},
                                                              _content_type=SMP))
    assert status == 403 and POLICY in message and "not its labels or annotations" in message
    assert "role" not in (core.read_node(a).metadata.labels or {})
    # The Node itself (spec: taints, unschedulable) is RBAC's to refuse: the agent may not patch `nodes` at all.
    status, message = refusal(lambda: agent.patch_node(
        a, {"spec": {"taints": [{"key": "evil", "value": "1", "effect": "NoSchedule"}]}}))
    assert status == 403 and 'cannot patch resource "nodes" in API group ""' in message
    assert "evil" not in taint_keys(core, a)

    # A token of the same ServiceAccount that is bound to no pod carries no node: it may write no Node at all.
    unbound = client.CoreV1Api(token_client(cluster, token(core, AGENT)))
    status, message = refusal(lambda: unbound.patch_node_status(a, condition_patch("NodemedicDeployE2E", "False"),
                                                                _content_type=SMP))
    assert status == 403 and "bound to a pod on no node" in message

    # Everyone else is not evaluated: the admin (as a kubelet or the remediator would) writes B's status.
    core.patch_node_status(b, condition_patch("NodemedicDeployE2E"), _content_type=SMP)
    assert condition(core, b, "NodemedicDeployE2E").status == "True"


# --- both programs with only the chart's permissions ------------------------------------------------
MONITOR = {
    "plugin": "kmsg", "logPath": "/dev/kmsg", "lookback": "5m", "bufferSize": 10, "source": "deploy-e2e",
    "conditions": [{"type": "NodemedicDeployE2E", "reason": "NoDeployE2EProblem", "message": "no problem"}],
    "rules": [
        {"type": "temporary", "reason": "DeployE2EProblem", "pattern": r"nodemedic deploy e2e problem \d+"},
        {"type": "permanent", "condition": "NodemedicDeployE2E", "reason": "DeployE2EProblem",
         "pattern": r"nodemedic deploy e2e problem \d+"},
    ],
}
BUILTINS = tuple(BUILTIN)
TAINT = "nodemedic.io/deploy-e2e"


def remediation_policy(namespace: str) -> str:
    return f"""\
apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
rules:
- name: deploy-e2e
  condition: {{type: NodemedicDeployE2E, status: "True", for: 1s}}
  taint: {{key: {TAINT}, value: "true", effect: NoSchedule}}
  evict: true
  recoverAfter: 1h
evictor:
  namespaces: {{include: [{namespace}]}}
limits: {{ownerCooldown: 0s}}
eviction: {{retryDeadline: 60s, initialBackoff: 200ms, maxBackoff: 1s}}
safety: {{maxTaintedNodes: 100, maxTaintedNodesPercent: 100}}
"""


def kmsg(root: Path, seq: int, message: str) -> None:
    usec = 3600 * 10**6 + seq
    with open(root / "dev" / "kmsg", "a") as f:
        f.write(f"3,{seq},{usec},-;{message}\n")


def test_the_agent_and_the_remediator_do_their_whole_job_with_only_the_chart_s_permissions(
    installed: str, cluster: LocalCluster, core: client.CoreV1Api, apps: client.AppsV1Api,
    node_pool: Callable[..., list[str]], namespace: str, tmp_path: Path,
) -> None:
    pool = node_pool(2)
    apps.create_namespaced_deployment(namespace, deployment("web", 1, pool))
    (a,) = wait_running(core, namespace, "web", 1).values()
    (b,) = set(pool) - {a}

    root = host_root(tmp_path)
    (tmp_path / "monitor.json").write_text(json.dumps(MONITOR))
    checks = "".join(f"  {c}: {{enabled: false}}\n" for c in BUILTINS)
    (tmp_path / "agent.yaml").write_text(f"apiVersion: nodemedic.io/v1alpha1\nkind: AgentConfig\nchecks:\n{checks}"
                                         f"systemLogMonitors: [{tmp_path / 'monitor.json'}]\n")
    agent_kubeconfig = token_kubeconfig(cluster, token(core, AGENT, agent_pod_on(core, a)), tmp_path / "agent.kc")
    remediator_pod = next(p for p in live_pods(core, "remediator") if p.status.phase == "Running")
    remediator_kubeconfig = token_kubeconfig(cluster, token(core, REMEDIATOR, remediator_pod),
                                             tmp_path / "remediator.kc")
    agent_log = tmp_path / "agent.log"
    with open(agent_log, "wb") as out:
        agent = subprocess.Popen(
            [sys.executable, "-m", "agent", "run", "--node-name", a, "--kubeconfig", str(agent_kubeconfig),
             "--config", str(tmp_path / "agent.yaml"), "--host-root", str(root), "--listen", ""],
            stdout=out, stderr=subprocess.STDOUT, env=dict(os.environ, PYTHONUNBUFFERED="1"))
    remediator = None
    try:
        wait_until(lambda: condition(core, a, "NodemedicDeployE2E") is not None
                   or (agent.poll() is not None and pytest.fail(agent_log.read_text()[-3000:])),
                   timeout=30, what="the agent's first status write (GET nodes, PATCH nodes/status)")
        remediator = start_remediator(tmp_path, remediator_kubeconfig, remediation_policy(namespace),
                                      name="deploy-e2e", lease_namespace=NS)

        def agent_events() -> list[client.CoreV1Event]:
            return core.list_namespaced_event(
                "default", field_selector=f"involvedObject.name={a},reason=DeployE2EProblem").items

        kmsg(root, 1, "nodemedic deploy e2e problem 7")
        wait_until(lambda: (c := condition(core, a, "NodemedicDeployE2E")) and c.status == "True",
                   timeout=30, what=f"NodemedicDeployE2E=True on {a}")
        (event,) = wait_until(agent_events, timeout=30, what="the agent's Event (POST events)")
        assert (event.count, event.reporting_component) == (1, "nodemedic-agent")
        kmsg(root, 2, "nodemedic deploy e2e problem 7")
        wait_until(lambda: [e.count for e in agent_events()] == [2], timeout=30,
                   what="the same Event aggregated (PATCH events: count 2)")

        wait_until(lambda: TAINT in taint_keys(core, a), timeout=30, what=f"the remediator's taint on {a}")
        moved = wait_until(lambda: (r := {p.metadata.name: p.spec.node_name for p in pods_of(core, namespace, "web")
                                          if p.status.phase == "Running"}) and set(r.values()) == {b} and r,
                           timeout=60, what=f"web evicted from {a} and running again on {b}")
        assert len(moved) == 1
        lease = client.CoordinationV1Api(cluster.api).read_namespaced_lease("nodemedic-remediator", NS)
        assert lease.spec.holder_identity == "deploy-e2e"
        assert remediator.metric("nodemedic_evictions_total", outcome="evicted") == 1
        wait_until(lambda: core.list_namespaced_event(namespace, field_selector="reason=NodemedicEvicted").items,
                   timeout=30, what="the remediator's NodemedicEvicted Event")
        for code in ("401", "403"):
            assert remediator.metric("nodemedic_api_requests_total", code=code) == 0, remediator.log()[-3000:]
        assert "HTTP 403" not in agent_log.read_text() and "HTTP 403" not in remediator.log()
    finally:
        if remediator is not None:
            remediator.stop()
        if agent.poll() is None:
            agent.terminate()
            try:
                agent.wait(15)
            except subprocess.TimeoutExpired:
                agent.kill()
                agent.wait(5)
        for node in pool:  # the Node Events both wrote into "default", which later tests read
            core.delete_collection_namespaced_event("default", field_selector=f"involvedObject.name={node}")


def test_a_bound_token_names_its_node_in_the_jwt_too(installed: str, core: client.CoreV1Api) -> None:
    """What the API server reads the node name from: the token's kubernetes.io claims."""
    pod = agent_pod_on(core, "kwok-node-0")
    payload = token(core, AGENT, pod).split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["kubernetes.io"]
    assert claims["node"]["name"] == "kwok-node-0" and claims["pod"]["name"] == pod.metadata.name
    assert claims["serviceaccount"]["name"] == AGENT


# --- helm itself ----------------------------------------------------------------------------------------
def test_helm_installs_upgrades_and_uninstalls_the_chart(
    cluster: LocalCluster, core: client.CoreV1Api, apps: client.AppsV1Api
) -> None:
    """A second release beside the plain manifests: every name (cluster-scoped ones too) carries the release; only
    the agent's host port must differ (both agents use the host network of every node)."""
    release, ns, base = "nm-helm", "nodemedic-helm-e2e", "nm-helm-nodemedic"
    chart = str(manifests.CHART)
    admission = client.AdmissionregistrationV1Api(cluster.api)
    rbac = client.RbacAuthorizationV1Api(cluster.api)
    try:
        out = helm(cluster, "install", release, chart, "-n", ns, "--create-namespace", "--set", "agent.port=20259",
                   "--wait", "--timeout=2m")
        assert "STATUS: deployed" in out and "REVISION: 1" in out, out
        nodes = {n.metadata.name for n in core.list_node().items}
        pods = core.list_namespaced_pod(ns, label_selector=f"app.kubernetes.io/instance={release}").items
        assert Counter(p.spec.node_name for p in pods if p.metadata.labels["app.kubernetes.io/component"] == "agent"
                       ) == dict.fromkeys(nodes, 1)
        assert apps.read_namespaced_deployment_status(f"{base}-remediator", ns).status.ready_replicas == 2
        vap = admission.read_validating_admission_policy(f"{base}-agent-own-node")
        assert f"system:serviceaccount:{ns}:{base}-agent" in vap.spec.match_conditions[0].expression

        out = helm(cluster, "upgrade", release, chart, "-n", ns, "--reuse-values", "--set",
                   "agent.logLevel=DEBUG,remediator.dryRun=true", "--wait", "--timeout=2m")
        assert "REVISION: 2" in out, out
        (agent,) = apps.read_namespaced_daemon_set(f"{base}-agent", ns).spec.template.spec.containers
        (remediator,) = apps.read_namespaced_deployment(f"{base}-remediator", ns).spec.template.spec.containers
        agent_args, remediator_args = agent.args, remediator.args
        assert "--log-level=DEBUG" in agent_args and "--dry-run" in remediator_args
        wait_until(lambda: (s := apps.read_namespaced_daemon_set_status(f"{base}-agent", ns).status)
                   and s.updated_number_scheduled == s.number_ready == len(nodes),
                   timeout=60, what="the upgraded agent rolled out on every node")
        assert json.loads(helm(cluster, "status", release, "-n", ns, "-o", "json"))["info"]["status"] == "deployed"

        helm(cluster, "uninstall", release, "-n", ns, "--wait", "--timeout=2m")
        for read in (lambda: admission.read_validating_admission_policy(f"{base}-agent-own-node"),
                     lambda: rbac.read_cluster_role(f"{base}-agent"),
                     lambda: rbac.read_cluster_role_binding(f"{base}-remediator"),
                     lambda: rbac.read_namespaced_role(f"{base}-agent-events", "default"),
                     lambda: apps.read_namespaced_daemon_set(f"{base}-agent", ns)):
            assert refusal(read)[0] == 404
    finally:
        helm(cluster, "uninstall", release, "-n", ns, "--ignore-not-found", "--wait", "--timeout=2m")
        kubectl(cluster, "delete", "pods", "--all", "-n", ns, "--grace-period=0", "--force", "--ignore-not-found")
        kubectl(cluster, "delete", "namespace", ns, "--ignore-not-found", "--wait", "--timeout=120s")
