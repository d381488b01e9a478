"""The Helm chart without helm: deploy/manifests/ (rendered from it) hold the expected objects, its configs are the
shipped ones and valid, its alerts use metrics the programs really export. `helm lint` and the rendering itself
need the built helm: tests/e2e/test_chart_render.py."""

from __future__ import annotations

import ast
import asyncio
import datetime as dt
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent import cli as agent_cli
from hack import manifests  # the renderer `make manifests` runs
from remediator import cli as remediator_cli
from remediator.actions.eviction_requests import Outcome
from remediator.model.landing import Landing
from remediator.policy.autoscaler import AUTO
from remediator.policy.loader import load_policy, validate_main
from remediator.state.autoscaler_detection import CLUSTER_AUTOSCALER_STATUS, KARPENTER_LEASE
from remediator.strategies import CATALOG

ROOT = Path(__file__).resolve().parents[3]

# Labels a Prometheus target or the ServiceMonitor's relabelling adds to every series.
TARGET_LABELS = {"job", "instance", "namespace", "pod", "service", "endpoint", "container", "node"}
NOW = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)


def docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def test_the_charts_config_copies_are_the_shipped_configs() -> None:
    diffs = manifests.stale({copy: source.read_text() for copy, source in manifests.CHART_FILES.items()})
    assert not diffs, "the chart's copies of deploy/ configs are stale: run `make manifests`\n" + "\n".join(diffs)


def test_the_rendered_objects_are_the_expected_set() -> None:
    kinds = sorted((d["kind"], d["metadata"]["name"], d["metadata"].get("namespace", ""))
                   for d in docs(manifests.MANIFESTS / "nodemedic.yaml"))
    assert kinds == sorted([
        ("Namespace", "nodemedic", ""),
        ("ServiceAccount", "nodemedic-agent", "nodemedic"),
        ("ServiceAccount", "nodemedic-remediator", "nodemedic"),
        ("ConfigMap", "nodemedic-agent", "nodemedic"),
        ("ConfigMap", "nodemedic-remediator", "nodemedic"),
        ("ClusterRole", "nodemedic-agent", ""),
        ("ClusterRole", "nodemedic-remediator", ""),
        ("ClusterRoleBinding", "nodemedic-agent", ""),
        ("ClusterRoleBinding", "nodemedic-remediator", ""),
        ("Role", "nodemedic-agent-events", "default"),
        ("RoleBinding", "nodemedic-agent-events", "default"),
        ("Role", "nodemedic-remediator-leader-election", "nodemedic"),
        ("RoleBinding", "nodemedic-remediator-leader-election", "nodemedic"),
        ("Role", "nodemedic-remediator-autoscaler-detection", "kube-system"),
        ("RoleBinding", "nodemedic-remediator-autoscaler-detection", "kube-system"),
        ("Service", "nodemedic-agent", "nodemedic"),
        ("Service", "nodemedic-remediator", "nodemedic"),
        ("DaemonSet", "nodemedic-agent", "nodemedic"),
        ("Deployment", "nodemedic-remediator", "nodemedic"),
        ("PodDisruptionBudget", "nodemedic-remediator", "nodemedic"),
        ("NetworkPolicy", "nodemedic-remediator", "nodemedic"),  # the scrapers and the API server's proxy only
        ("ValidatingAdmissionPolicy", "nodemedic-agent-own-node", ""),
        ("ValidatingAdmissionPolicyBinding", "nodemedic-agent-own-node", ""),
        ("ResourceQuota", "nodemedic-critical-pods", "nodemedic"),  # GKE admits system-* priority pods with it
        ("ClusterRole", "nodemedic-viewer", ""),  # read-only; bound to rbac.viewerGroups, none by default
        ("Role", "nodemedic-viewer", "nodemedic"),
        ("ClusterRole", "nodemedic-repairer", ""),  # kubectl nodemedic repair; bound to rbac.repairerGroups, none
        ("ValidatingAdmissionPolicy", "nodemedic-remediator-repair-annotation", ""),  # the ladder is the remediator's
        ("ValidatingAdmissionPolicyBinding", "nodemedic-remediator-repair-annotation", ""),
        # A balance move's replacement pinned to its planned node (eviction.landing: planned)
        ("CustomResourceDefinition", "landings.nodemedic.io", ""),  # the policy's parameters (crds/)
        ("CustomResourceDefinition", "migrations.nodemedic.io", ""),  # the engines' plans for a person (crds/)
        ("Role", "nodemedic-approver", "nodemedic"),  # kubectl nodemedic approve; bound to rbac.approverGroups, none
        ("ClusterRole", "nodemedic-approver", ""),
        ("MutatingAdmissionPolicy", "nodemedic-remediator-landing", ""),
        ("MutatingAdmissionPolicyBinding", "nodemedic-remediator-landing", ""),
        ("Role", "nodemedic-remediator-landing", "nodemedic"),  # its Landings, in the release namespace
        ("RoleBinding", "nodemedic-remediator-landing", "nodemedic"),
    ])
    monitoring = sorted((d["kind"], d["metadata"]["name"]) for d in docs(manifests.MANIFESTS / "monitoring.yaml"))
    assert monitoring == [("ConfigMap", "nodemedic-dashboard"), ("PrometheusRule", "nodemedic"),
                          ("ServiceMonitor", "nodemedic-agent"), ("ServiceMonitor", "nodemedic-remediator")]


def _configmap(name: str) -> dict[str, str]:
    return next(d["data"] for d in docs(manifests.MANIFESTS / "nodemedic.yaml")
                if d["kind"] == "ConfigMap" and d["metadata"]["name"] == name)


def test_the_configmaps_carry_the_shipped_defaults_and_they_validate(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    agent_yaml = _configmap("nodemedic-agent")["agent.yaml"]
    policy_yaml = _configmap("nodemedic-remediator")["policy.yaml"]
    assert agent_yaml == (ROOT / "deploy" / "agent" / "default.yaml").read_text()
    assert policy_yaml == (ROOT / "deploy" / "policy" / "default.yaml").read_text()
    (tmp_path / "agent.yaml").write_text(agent_yaml)
    (tmp_path / "policy.yaml").write_text(policy_yaml)
    assert agent_cli.main(["validate", "--config", str(tmp_path / "agent.yaml")]) == 0, capsys.readouterr().err
    assert validate_main(str(tmp_path / "policy.yaml"), catalog=CATALOG) == 0, capsys.readouterr().err


def test_the_containers_run_the_console_scripts_with_arguments_the_programs_accept(
        monkeypatch: pytest.MonkeyPatch) -> None:
    objs = {d["kind"]: d for d in docs(manifests.MANIFESTS / "nodemedic.yaml")}
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'nodemedic-agent = "agent.cli:main"' in pyproject
    assert 'nodemedic-remediator = "remediator.cli:main"' in pyproject
    agent = objs["DaemonSet"]["spec"]["template"]["spec"]
    remediator = objs["Deployment"]["spec"]["template"]["spec"]
    (a,), (r,) = agent["containers"], remediator["containers"]
    assert a["command"] == ["nodemedic-agent"] and r["command"] == ["nodemedic-remediator"]

    # The programs' own parsers read the arguments (an unknown flag exits 2); `run` itself is replaced.
    seen: dict[str, Any] = {}

    async def record(name: str, args: Any) -> int:
        seen[name] = args
        return 0

    monkeypatch.setattr(agent_cli.logs, "setup", lambda *_: None)
    monkeypatch.setattr(agent_cli, "_run", lambda args, _log: record("agent", args))
    monkeypatch.setattr(remediator_cli, "cmd_run", lambda args: asyncio.run(record("remediator", args)))
    assert agent_cli.main([x.replace("$(NODE_NAME)", "node-a") for x in a["args"]]) == 0
    assert remediator_cli.main([x.replace("$(POD_NAME)", "pod-1") for x in r["args"]]) == 0

    args = seen["agent"]
    assert (args.node_name, args.host_root, args.state_dir) == ("node-a", "/host", "/var/lib/nodemedic")
    assert args.config == "/etc/nodemedic/agent/agent.yaml"
    assert args.listen == f":{a['ports'][0]['containerPort']}"
    mounts = {m["mountPath"]: m for m in a["volumeMounts"]}
    assert mounts["/host"]["readOnly"] is True and mounts["/etc/nodemedic/agent"]["readOnly"] is True
    assert "readOnly" not in mounts["/var/lib/nodemedic"]  # the one host path it writes
    assert a["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert a["resources"] == {"requests": {"cpu": "10m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}}
    assert agent["tolerations"] == [{"operator": "Exists"}] and agent["hostNetwork"] is True
    assert agent["priorityClassName"] == "system-node-critical"

    args = seen["remediator"]
    assert args.policy == "/etc/nodemedic/policy/policy.yaml"
    assert (args.lease_namespace, args.identity, args.dry_run) == ("nodemedic", "pod-1", False)
    assert objs["Deployment"]["spec"]["replicas"] == 2
    assert r["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert r["securityContext"]["readOnlyRootFilesystem"] is True
    assert r["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert remediator["securityContext"]["runAsNonRoot"] is True


# --- alerts ------------------------------------------------------------------------------------------
def exported_metrics() -> dict[str, set[str]]:
    """Every `nodemedic_*` series name agent/ and remediator/ register, with its label names (from the source)."""
    out: dict[str, set[str]] = {}
    for path in [*(ROOT / "agent").rglob("*.py"), *(ROOT / "remediator").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in {"Counter", "Gauge", "Histogram", "Summary"} and node.args
                    and isinstance(node.args[0], ast.Constant) and str(node.args[0].value).startswith("nodemedic_")):
                continue
            name = str(node.args[0].value)
            label_node = node.args[2] if len(node.args) > 2 else next(
                (k.value for k in node.keywords if k.arg == "labelnames"), None)
            labels = {str(e.value) for e in getattr(label_node, "elts", []) if isinstance(e, ast.Constant)}
            if node.func.id == "Counter":
                names = [name if name.endswith("_total") else f"{name}_total"]
            elif node.func.id in {"Histogram", "Summary"}:
                names = [name, f"{name}_bucket", f"{name}_sum", f"{name}_count"]
            else:
                names = [name]
            for n in names:
                out[n] = labels | ({"le"} if n.endswith("_bucket") else set())
    return out


def rules() -> list[dict[str, Any]]:
    rule = next(d for d in docs(manifests.MANIFESTS / "monitoring.yaml") if d["kind"] == "PrometheusRule")
    return [r for g in rule["spec"]["groups"] for r in g["rules"]]


def test_the_alerts_cover_the_issue_and_use_only_metrics_and_labels_the_programs_export() -> None:
    alerts = {r["alert"]: r for r in rules()}
    assert {"NodemedicCircuitBreakerOpen", "NodemedicRemediationStuck", "NodemedicEvictionsFailing",
            "NodemedicAgentNotReporting", "NodemedicConditionOnManyNodes"} <= set(alerts)
    exported = exported_metrics()
    assert "nodemedic_circuit_breaker_open" in exported and "nodemedic_agent_condition_status" in exported
    used = 0
    for name, rule in alerts.items():
        expr = rule["expr"]  # parsed by Prometheus's own parser: tests/unit/deploy/test_prometheus_rules.py
        for metric, selector in re.findall(r"\b(nodemedic_\w+)(?:\{([^}]*)\})?", expr):
            used += 1
            assert metric in exported, f"{name}: {metric} is not a metric agent/ or remediator/ export"
            for key, _, value in re.findall(r'(\w+)\s*(=~|!=|!~|=)\s*"([^"]*)"', selector):
                assert key in exported[metric] | TARGET_LABELS, f"{name}: {metric} has no label {key}"
                if key == "outcome":
                    assert set(value.split("|")) <= {str(o) for o in Outcome}, f"{name}: outcome {value}"
            for key in re.findall(r"(\w+)\s*(?:=~|!=|!~|=)", selector):
                assert key in exported[metric] | TARGET_LABELS, f"{name}: {metric} has no label {key}"
        for by in re.findall(r"by \(([^)]*)\)", expr):
            for key in (k.strip() for k in by.split(",")):
                assert key in TARGET_LABELS | {lbl for ls in exported.values() for lbl in ls}, f"{name}: by {key}"
    assert used >= 8


def test_the_remediation_stuck_alert_watches_the_condition_types_of_the_policy_rules() -> None:
    policy = yaml.safe_load((ROOT / "deploy" / "policy" / "default.yaml").read_text())
    types = {r["condition"]["type"] for r in policy["rules"]}
    expr = next(r["expr"] for r in rules() if r["alert"] == "NodemedicRemediationStuck")
    (alternatives,) = re.findall(r'type=~"([^"]*)"', expr)
    assert set(alternatives.split("|")) == types


def test_notification_credentials_are_mounted_from_a_secret_never_carried_in_a_configmap() -> None:
    objs = docs(manifests.MANIFESTS / "nodemedic.yaml")
    spec = next(d for d in objs if d["kind"] == "Deployment")["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    (container,) = spec["containers"]
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    assert volumes["notification-secrets"]["secret"] == {"secretName": "nodemedic-notifications", "optional": True}
    assert mounts["notification-secrets"] == {"name": "notification-secrets", "mountPath": "/etc/nodemedic/secrets",
                                              "readOnly": True}
    # The policy's own example refers to the mounted keys, and the chart creates no Secret to hold a value itself.
    assert "{file: /etc/nodemedic/secrets/slack-url}" in (ROOT / "deploy" / "policy" / "default.yaml").read_text()
    assert not [d for d in objs if d["kind"] == "Secret"]


def _granted(role: str) -> set[tuple[str, str]]:
    (doc,) = [d for d in docs(manifests.MANIFESTS / "nodemedic.yaml")
              if d["kind"] == "ClusterRole" and d["metadata"]["name"] == role]
    return {(resource, verb) for rule in doc["rules"] for resource in rule["resources"] for verb in rule["verbs"]}


def test_pods_status_is_granted_only_for_a_policy_that_nominates(tmp_path: Path) -> None:
    """The remediator patches pods/status only to nominate (actions/nominator.py, MakeRoomForPendingPods): the
    rendered default policy has no such strategy, so no such grant."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(_configmap("nodemedic-remediator")["policy.yaml"])
    nominates = any(s.name == "MakeRoomForPendingPods" for s in load_policy(policy, catalog=CATALOG).strategies)
    assert not nominates
    assert ("pods/status", "patch") not in _granted("nodemedic-remediator")
    calls = "\n".join(p.read_text() for p in (ROOT / "remediator").rglob("*.py"))
    # A pod's status subresource in an API path (the server's own /status route and the plugin's reads of it are
    # not the API's): exactly one, the nominator's.
    assert re.findall(r"pods/\{[^}]*\}/status", calls) == ["pods/{pod.name}/status"], "pods/status has one writer"


def test_the_remediator_may_get_the_one_configmap_that_shows_cluster_autoscaler_and_write_only_its_landings() -> None:
    """autoscaler.addsNodes: auto, the shipped default, looks for that ConfigMap (state/autoscaler_detection.py):
    without the grant every look would be a 403 (tests/e2e/test_deploy.py counts none). Its own savings ledger is the
    one ConfigMap it may write (and create: RBAC cannot limit create to a name), in the release namespace."""
    objs = docs(manifests.MANIFESTS / "nodemedic.yaml")
    assert yaml.safe_load(_configmap("nodemedic-remediator")["policy.yaml"])["autoscaler"]["addsNodes"] == AUTO
    (role,) = [d for d in objs if d["kind"] == "Role" and d["metadata"]["name"].endswith("-autoscaler-detection")]
    assert (role["metadata"]["namespace"], role["rules"]) == (CLUSTER_AUTOSCALER_STATUS[0], [
        {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": [CLUSTER_AUTOSCALER_STATUS[1]],
         "verbs": ["get"]}])
    (binding,) = [d for d in objs if d["kind"] == "RoleBinding" and d["metadata"]["name"] == role["metadata"]["name"]]
    assert binding["metadata"]["namespace"] == CLUSTER_AUTOSCALER_STATUS[0]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "nodemedic-remediator", "namespace": "nodemedic"}]
    granted = [(d["metadata"].get("namespace"), rule) for d in objs if d["kind"] in ("Role", "ClusterRole")
               and "remediator" in d["metadata"]["name"] for rule in d["rules"] if "configmaps" in rule["resources"]]
    assert granted == [
        ("nodemedic", {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]}),
        ("nodemedic", {"apiGroups": [""], "resources": ["configmaps"],
                       "resourceNames": ["nodemedic-remediator-savings"], "verbs": ["get", "update"]}),
        (CLUSTER_AUTOSCALER_STATUS[0], role["rules"][0])], "no other grant on ConfigMaps"
    (deployment,) = [d for d in objs if d["kind"] == "Deployment" and d["metadata"]["name"] == "nodemedic-remediator"]
    assert "--savings-ledger=nodemedic-remediator-savings" in deployment["spec"]["template"]["spec"]["containers"][0][
        "args"]
    landings = [(d["metadata"].get("namespace"), rule) for d in objs if d["kind"] in ("Role", "ClusterRole")
                for rule in d["rules"] if "landings" in rule["resources"]]
    assert landings == [("nodemedic", {"apiGroups": ["nodemedic.io"], "resources": ["landings"],
                                       "verbs": ["create", "delete", "list"]})], (
        "Landings written in the release namespace only (remediator/control/landings.py)")


def test_a_landing_object_is_what_the_crd_admits_and_holds_every_field_the_policy_reads() -> None:
    """The remediator's Landing (model/landing.py), the CRD's schema and the admission policy's CEL name the same
    fields: a field the CRD does not know is pruned, and one the policy reads that is missing is an error it ignores
    (failurePolicy Ignore), leaving every move unpinned."""
    objs = docs(manifests.MANIFESTS / "nodemedic.yaml")
    (crd,) = [d for d in objs if d["kind"] == "CustomResourceDefinition" and d["spec"]["names"]["kind"] == "Landing"]
    (version,) = crd["spec"]["versions"]
    schema = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    landing = Landing(name="nodemedic-landing-0011aabb", namespace="shop", owner_uid="u", owner="ReplicaSet/web",
                      node="n2", hostname="n2", moved="shop/a", source="n1", decided=NOW, before=frozenset(),
                      strategy="BalanceResourceMix", lasts=dt.timedelta(minutes=2), deadline=NOW)
    obj = landing.resource("nodemedic")
    served = (f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"])
    assert (obj["apiVersion"], obj["kind"]) == served
    spec = obj["spec"]
    assert isinstance(spec, dict) and set(spec) <= set(schema["properties"]) and set(schema["required"]) <= set(spec)
    (policy,) = [d for d in objs if d["kind"] == "MutatingAdmissionPolicy"]
    assert policy["spec"]["paramKind"] == {"apiVersion": obj["apiVersion"], "kind": obj["kind"]}
    read = set(re.findall(r"params\.spec\.(\w+)", yaml.safe_dump(policy["spec"])))
    assert read and read <= set(schema["required"]), read


def test_the_remediator_may_list_only_karpenters_leader_lease_across_namespaces() -> None:
    """Karpenter is counted on while its leader's Lease is fresh (state/autoscaler_detection.py), wherever it runs:
    `list` narrowed by name, which the API server allows only with that metadata.name field selector."""
    objs = docs(manifests.MANIFESTS / "nodemedic.yaml")
    (role,) = [d for d in objs if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "nodemedic-remediator"]
    assert [r for r in role["rules"] if "leases" in r["resources"]] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": [KARPENTER_LEASE],
         "verbs": ["list"]}]


def test_the_agent_may_watch_nodes_and_sees_the_hosts_pids_because_the_default_config_has_repair_on() -> None:
    """Its own Node's repair ask (agent/reporting/node_watch.py) and `nsenter --target 1` into the host."""
    config = yaml.safe_load(_configmap("nodemedic-agent")["agent.yaml"]) or {}
    assert (config.get("repair") or {}).get("enabled", True)
    assert {("nodes", "get"), ("nodes", "list"), ("nodes", "watch")} <= _granted("nodemedic-agent")
    assert not {("nodes", v) for v in ("create", "update", "patch", "delete")} & _granted("nodemedic-agent")
    (daemonset,) = [d for d in docs(manifests.MANIFESTS / "nodemedic.yaml") if d["kind"] == "DaemonSet"]
    assert daemonset["spec"]["template"]["spec"]["hostPID"] is True


def test_the_agent_may_list_and_watch_pods_because_the_default_config_runs_stuck_pods() -> None:
    config = yaml.safe_load(_configmap("nodemedic-agent")["agent.yaml"]) or {}
    assert (config.get("checks") or {}).get("stuckPods", {}).get("enabled", True)
    assert {("pods", "list"), ("pods", "watch")} <= _granted("nodemedic-agent")
    assert not {("pods", v) for v in ("get", "create", "update", "patch", "delete")} & _granted("nodemedic-agent")
