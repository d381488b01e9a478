"""The chart's values through the pinned helm (`helm install --dry-run=client`: the objects and NOTES.txt, no
cluster): names for every release name and override, the ServiceAccounts, topology spread, the priority-class
quota GKE needs, the viewer roles, NOTES for each mode, and values.schema.json refusing typos. Helm missing: these
tests FAIL, never skip (`make build` builds it)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from hack import manifests  # the pinned helm and its state directories
from nodemedic_common import logs

SCHEMA = manifests.CHART / "values.schema.json"
SYSTEM_CLASSES = ["system-node-critical", "system-cluster-critical"]


@pytest.fixture(autouse=True, scope="module")
def helm() -> Path:
    try:
        return manifests.helm()
    except manifests.HelmMissing as e:
        pytest.fail(f"{e}; the chart tests need it and never skip", pytrace=False)


@dataclass(frozen=True)
class Release:
    objects: list[dict[str, Any]]
    notes: str

    def kinds(self, kind: str) -> list[dict[str, Any]]:
        return [o for o in self.objects if o["kind"] == kind]

    def one(self, kind: str, name: str | None = None) -> dict[str, Any]:
        (found,) = [o for o in self.kinds(kind) if name is None or o["metadata"]["name"] == name]
        return found

    def names(self) -> set[tuple[str, str]]:
        return {(o["kind"], o["metadata"]["name"]) for o in self.objects}

    def pod_spec(self) -> dict[str, Any]:
        """The remediator's pod spec, whichever the mode."""
        if cronjobs := self.kinds("CronJob"):
            return cronjobs[0]["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        return self.one("Deployment")["spec"]["template"]["spec"]


def install(*values: str, release: str = "nodemedic", namespace: str = "nodemedic") -> Release:
    args = [arg for value in values for arg in ("--set", value)]
    out = manifests.run_helm("install", release, str(manifests.CHART), "--dry-run=client", "-n", namespace,
                             "-o", "json", *args)
    doc = json.loads(out)
    return Release([d for d in yaml.safe_load_all(doc["manifest"]) if d], doc["info"]["notes"])


def refused(*values: str) -> str:
    """helm's error for values the chart must refuse."""
    with pytest.raises(RuntimeError) as e:
        install(*values)
    return str(e.value)


def subjects(r: Release) -> list[tuple[str, str, str]]:
    """(binding, subject name, subject namespace) of every ServiceAccount subject the release binds."""
    return [(b["metadata"]["name"], s["name"], s.get("namespace", ""))
            for b in r.kinds("ClusterRoleBinding") + r.kinds("RoleBinding") for s in b["subjects"]
            if s["kind"] == "ServiceAccount"]


# --- helm lint and the schema ------------------------------------------------------------------------
LINTED = {
    "defaults": [],
    "monitoring": ["serviceMonitor.enabled=true,prometheusRule.enabled=true,namespace.create=true"],
    "cronjob-dry-run": ["remediator.mode=cronjob,remediator.dryRun=true,prometheusRule.enabled=true"],
    "existing-service-accounts": ["agent.serviceAccount.create=false,agent.serviceAccount.name=a",
                                  "remediator.serviceAccount.create=false,remediator.serviceAccount.name=r"],
    "viewers-spread-overrides": ["rbac.viewerGroups={sre}", "fullnameOverride=nm",
                                 "remediator.topologySpreadConstraints[0].maxSkew=1",
                                 "remediator.topologySpreadConstraints[0].topologyKey=topology.kubernetes.io/zone",
                                 "remediator.topologySpreadConstraints[0].whenUnsatisfiable=ScheduleAnyway"],
}


@pytest.mark.parametrize("values", LINTED.values(), ids=LINTED.keys())
def test_helm_lint_strict_passes(values: list[str]) -> None:
    out = manifests.run_helm("lint", "--strict", str(manifests.CHART), "--namespace", "nodemedic",
                             *[a for v in values for a in ("--set", v)])
    assert "1 chart(s) linted, 0 chart(s) failed" in out, out
    assert "[WARNING]" not in out and "[ERROR]" not in out, out


def test_helm_lint_strict_fails_on_a_misspelt_value_with_the_schema_s_error() -> None:
    with pytest.raises(RuntimeError) as e:
        manifests.run_helm("lint", "--strict", str(manifests.CHART), "--set", "remediator.modee=x")
    assert "at '/remediator': additional properties 'modee' not allowed" in str(e.value)


TYPOS = {
    "remediator.modee=x": "at '/remediator': additional properties 'modee' not allowed",
    "agent.serviceAcount.create=false": "at '/agent': additional properties 'serviceAcount' not allowed",
    "priorityClassQuota.enable=false": "at '/priorityClassQuota': additional properties 'enable' not allowed",
    "rbac.viewerGroup={sre}": "at '/rbac': additional properties 'viewerGroup' not allowed",
    "remediator.cronJob.scheddule=x": "at '/remediator/cronJob': additional properties 'scheddule' not allowed",
    "nameOveride=x": "at '': additional properties 'nameOveride' not allowed",
}


@pytest.mark.parametrize(("value", "error"), TYPOS.items(), ids=TYPOS.keys())
def test_the_schema_rejects_a_misspelt_key_and_names_it(value: str, error: str) -> None:
    message = refused(value)
    assert "values don't meet the specifications of the schema" in message and error in message, message


BAD = {
    "remediator.mode=Deployment": "at '/remediator/mode': value must be one of 'deployment', 'cronjob'",
    "agent.port=http": "at '/agent/port': got string, want integer",
    "remediator.replicas=-1": "at '/remediator/replicas': minimum: got -1, want 0",
    "agent.logLevel=verbose": "at '/agent/logLevel': value must be one of",
    "image.pullPolicy=always": "at '/image/pullPolicy': value must be one of",
    "priorityClassQuota.pods=0": "at '/priorityClassQuota/pods': minimum: got 0, want 1",
    "fullnameOverride=Ops_Healer": "at '/fullnameOverride'",
    "remediator.topologySpreadConstraints[0].maxSkew=1":
        "at '/remediator/topologySpreadConstraints/0': missing properties 'topologyKey', 'whenUnsatisfiable'",
    "prometheusRule.agentSilentFor=15 minutes": "at '/prometheusRule/agentSilentFor'",
}


@pytest.mark.parametrize(("value", "error"), BAD.items(), ids=BAD.keys())
def test_the_schema_rejects_a_value_of_the_wrong_type_or_out_of_range(value: str, error: str) -> None:
    message = refused(value)
    assert error in message, message


def _keys(values: dict[str, Any], schema: dict[str, Any], path: str = "") -> list[str]:
    """Keys of values.yaml the schema does not describe, and keys the schema describes that values.yaml lacks,
    walking only the objects the chart owns (additionalProperties: false)."""
    props = schema.get("properties", {})
    missing = [f"{path}{k}: not in the schema" for k in values if k not in props]
    missing += [f"{path}{k}: no default in values.yaml" for k in props if k not in values and k != "global"]
    for k, prop in props.items():
        sub = schema_defs()[prop["$ref"].rsplit("/", 1)[1]] if "$ref" in prop else prop
        if k in values and isinstance(values[k], dict) and sub.get("additionalProperties") is False \
                and "patternProperties" not in sub:  # a map of label keys, not an object of the chart's
            missing += _keys(values[k], sub, f"{path}{k}.")
    return missing


def schema_defs() -> dict[str, Any]:
    return dict(json.loads(SCHEMA.read_text())["definitions"])


def test_the_schema_describes_exactly_the_keys_of_values_yaml_and_closes_every_object_the_chart_owns() -> None:
    schema = json.loads(SCHEMA.read_text())
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    values = yaml.safe_load((manifests.CHART / "values.yaml").read_text())
    assert _keys(values, schema) == []

    def closed(node: dict[str, Any], path: str) -> list[str]:
        if "$ref" in node:
            return []
        open_maps = {"extraFiles", "resources", "affinity", "nodeSelector", "securityContext", "podSecurityContext",
                     "updateStrategy", "podAnnotations", "podLabels", "labels", "annotations", "global"}
        out = []
        if node.get("type") == "object" and "properties" in node and node.get("additionalProperties") is not False:
            out.append(path)
        for k, sub in node.get("properties", {}).items():
            if k not in open_maps:
                out += closed(sub, f"{path}.{k}")
        return out

    assert closed(schema, "") == []
    assert closed(schema_defs()["serviceAccount"], "serviceAccount") == []


# --- names ---------------------------------------------------------------------------------------------
NAMES = {
    # (release, values) -> the base name of every object
    "release-nodemedic": ("nodemedic", [], "nodemedic"),
    "release-containing-the-name": ("nodemedic-prod", [], "nodemedic-prod"),
    "another-release": ("ops", [], "ops-nodemedic"),
    "nameOverride": ("ops", ["nameOverride=healer"], "ops-healer"),
    "release-containing-the-nameOverride": ("healer-eu", ["nameOverride=healer"], "healer-eu"),
    "fullnameOverride": ("ops", ["fullnameOverride=nm", "nameOverride=healer"], "nm"),
}


@pytest.mark.parametrize(("release", "values", "base"), NAMES.values(), ids=NAMES.keys())
def test_every_object_s_name_derives_from_the_fullname(release: str, values: list[str], base: str) -> None:
    r = install(*values, "rbac.viewerGroups={sre}", "remediator.prometheusTokenSecret.namespace=monitoring",
                "remediator.prometheusTokenSecret.name=token", "serviceMonitor.enabled=true",
                "prometheusRule.enabled=true", release=release, namespace="tools")
    for kind, name in r.names():
        assert name == base or name.startswith(f"{base}-"), f"{kind}/{name} does not derive from {base}"
    assert ("DaemonSet", f"{base}-agent") in r.names() and ("Deployment", f"{base}-remediator") in r.names()
    assert ("ValidatingAdmissionPolicy", f"{base}-agent-own-node") in r.names()
    assert ("ResourceQuota", f"{base}-critical-pods") in r.names()
    assert ("ClusterRole", f"{base}-viewer") in r.names()
    name_label = "healer" if "nameOverride=healer" in values else "nodemedic"
    for o in r.objects:
        assert o["metadata"]["labels"]["app.kubernetes.io/name"] == name_label
        assert o["metadata"]["labels"]["app.kubernetes.io/instance"] == release
    selector = r.one("Deployment")["spec"]["selector"]["matchLabels"]
    assert selector == {"app.kubernetes.io/name": name_label, "app.kubernetes.io/instance": release,
                        "app.kubernetes.io/component": "remediator"}
    (container,) = r.pod_spec()["containers"]
    assert f"--lease-name={base}-remediator" in container["args"]
    assert r.one("ClusterRoleBinding", f"{base}-agent")["subjects"] == [
        {"kind": "ServiceAccount", "name": f"{base}-agent", "namespace": "tools"}]
    own_node = r.one("ValidatingAdmissionPolicy", f"{base}-agent-own-node")["spec"]
    expression = own_node["matchConditions"][0]["expression"]
    assert expression == f'request.userInfo.username == "system:serviceaccount:tools:{base}-agent"'
    # Only the remediator's ServiceAccount may write the repair ladder's annotation: everyone else is checked.
    repair = r.one("ValidatingAdmissionPolicy", f"{base}-remediator-repair-annotation")["spec"]
    assert repair["matchConditions"][0]["expression"] == (
        f'request.userInfo.username != "system:serviceaccount:tools:{base}-remediator"')
    assert ("ClusterRole", f"{base}-repairer") in r.names()
    assert {f"{base}-agent", f"{base}-remediator"} <= {m["metadata"]["name"] for m in r.kinds("ServiceMonitor")}
    exprs = [rule["expr"] for group in r.one("PrometheusRule")["spec"]["groups"] for rule in group["rules"]]
    assert any(f'job="{base}-remediator"' in e for e in exprs) and any(f'job="{base}-agent"' in e for e in exprs)
    # NOTES names this release's objects, never another release's.
    assert f"daemonset/{base}-agent" in r.notes and f"deployment/{base}-remediator" in r.notes
    assert f"lease/{base}-remediator" in r.notes
    assert set(re.findall(r"(?<![-a-z0-9])[a-z0-9][-a-z0-9]*-(?:agent|remediator)(?![-a-z0-9])", r.notes)) == {
        f"{base}-agent", f"{base}-remediator"}


def test_a_cronjob_name_kubernetes_would_refuse_fails_the_render_with_the_fix() -> None:
    message = refused("remediator.mode=cronjob", "fullnameOverride=" + "n" * 45)
    assert f"the CronJob's name {'n' * 45}-remediator is 56 characters, Kubernetes allows 52" in message
    assert "set fullnameOverride" in message
    assert install("remediator.mode=cronjob", "fullnameOverride=" + "n" * 41).one("CronJob")


# --- NOTES per mode -------------------------------------------------------------------------------------
def test_the_notes_of_the_controller_name_its_deployment_and_its_lease() -> None:
    r = install(release="healer", namespace="ops")
    assert "installed as release healer in namespace ops" in r.notes
    assert "kubectl -n ops get daemonset/healer-nodemedic-agent configmap/healer-nodemedic-agent" in r.notes
    assert "kubectl -n ops get deployment/healer-nodemedic-remediator configmap/healer-nodemedic-remediator" in r.notes
    assert "kubectl -n ops get lease/healer-nodemedic-remediator -o jsonpath='{.spec.holderIdentity}" in r.notes
    assert "port-forward deployment/healer-nodemedic-remediator 8080:8080" in r.notes
    assert "curl -s localhost:8080/plan" in r.notes
    assert "kubectl nodemedic -n ops status" in r.notes and "kubectl nodemedic -n ops why NODE" in r.notes
    assert "cronjob" not in r.notes.lower() and "DRY RUN" not in r.notes


def test_the_notes_of_a_dry_run_say_so_and_show_where_the_plan_is_and_name_no_lease() -> None:
    r = install("remediator.dryRun=true", "remediator.port=9090", release="healer", namespace="ops")
    assert "DRY RUN (remediator.dryRun): every replica plans and reports, and none writes" in r.notes
    assert "kubectl -n ops logs deployment/healer-nodemedic-remediator | grep 'dry-run: would'" in r.notes
    assert "port-forward deployment/healer-nodemedic-remediator 9090:9090" in r.notes
    assert "localhost:9090/plan" in r.notes
    assert "lease/" not in r.notes
    (container,) = r.pod_spec()["containers"]
    assert "--dry-run" in container["args"]


def test_the_notes_of_cronjob_mode_name_the_cronjob_and_how_to_start_a_run_and_no_deployment_or_lease() -> None:
    r = install("remediator.mode=cronjob", "remediator.cronJob.timeZone=Europe/Paris", release="healer",
                namespace="ops")
    assert {"CronJob", "Deployment", "Service", "PodDisruptionBudget"} & {o["kind"] for o in r.objects} == {
        "CronJob", "Service"}  # the agent's Service only
    selector = "app.kubernetes.io/instance=healer,app.kubernetes.io/component=remediator"
    assert 'CronJob healer-nodemedic-remediator (schedule "*/5 * * * *", time zone Europe/Paris)' in r.notes
    assert "kubectl -n ops get cronjob/healer-nodemedic-remediator configmap/healer-nodemedic-remediator" in r.notes
    assert ("kubectl -n ops create job --from=cronjob/healer-nodemedic-remediator "
            "healer-nodemedic-remediator-$(date +%s)") in r.notes
    assert f"kubectl -n ops get jobs -l {selector}" in r.notes
    assert f"kubectl -n ops logs -l {selector} --prefix --tail=-1" in r.notes
    assert "deployment/" not in r.notes and "lease/" not in r.notes and "/plan" not in r.notes.replace(
        "no /plan endpoint", "").replace("/plan through the pod proxy", "")
    assert "DRY RUN" not in r.notes
    # The Jobs carry the labels NOTES selects them by (kubectl create job --from copies them).
    labels = r.one("CronJob")["spec"]["jobTemplate"]["metadata"]["labels"]
    assert labels["app.kubernetes.io/instance"] == "healer" and labels["app.kubernetes.io/component"] == "remediator"


def test_the_notes_of_a_cronjob_dry_run_point_at_the_runs_logs() -> None:
    r = install("remediator.mode=cronjob", "remediator.dryRun=true", release="healer", namespace="ops")
    assert "DRY RUN (remediator.dryRun): each run plans and reports, and writes nothing" in r.notes
    assert ("kubectl -n ops logs -l app.kubernetes.io/instance=healer,app.kubernetes.io/component=remediator "
            "--prefix --tail=-1 | grep 'dry-run: would'") in r.notes
    (container,) = r.pod_spec()["containers"]
    assert "--dry-run" in container["args"] and "--once" in container["args"]


# --- ServiceAccounts -----------------------------------------------------------------------------------
def test_existing_service_accounts_are_used_by_the_pods_and_every_binding_and_none_is_created() -> None:
    r = install("agent.serviceAccount.create=false", "agent.serviceAccount.name=node-agent",
                "remediator.serviceAccount.create=false", "remediator.serviceAccount.name=healer",
                "remediator.prometheusTokenSecret.namespace=monitoring", "remediator.prometheusTokenSecret.name=t")
    assert r.kinds("ServiceAccount") == []
    assert r.one("DaemonSet")["spec"]["template"]["spec"]["serviceAccountName"] == "node-agent"
    assert r.pod_spec()["serviceAccountName"] == "healer"
    bound = subjects(r)
    assert sorted(bound) == sorted([
        ("nodemedic-agent", "node-agent", "nodemedic"),
        ("nodemedic-agent-events", "node-agent", "nodemedic"),
        ("nodemedic-remediator", "healer", "nodemedic"),
        ("nodemedic-remediator-leader-election", "healer", "nodemedic"),
        ("nodemedic-remediator-autoscaler-detection", "healer", "nodemedic"),
        ("nodemedic-remediator-prometheus-token", "healer", "nodemedic"),
        ("nodemedic-remediator-landing", "healer", "nodemedic"),
    ])
    expression = r.one("ValidatingAdmissionPolicy", "nodemedic-agent-own-node")["spec"]["matchConditions"][0][
        "expression"]
    assert expression == 'request.userInfo.username == "system:serviceaccount:nodemedic:node-agent"'
    repair = r.one("ValidatingAdmissionPolicy", "nodemedic-remediator-repair-annotation")["spec"]
    assert repair["matchConditions"][0]["expression"] == (
        'request.userInfo.username != "system:serviceaccount:nodemedic:healer"')
    cron = install("remediator.mode=cronjob", "remediator.serviceAccount.create=false",
                   "remediator.serviceAccount.name=healer")
    assert cron.pod_spec()["serviceAccountName"] == "healer"


def test_a_created_service_account_may_be_named_and_annotated() -> None:
    r = install("remediator.serviceAccount.name=healer",
                "remediator.serviceAccount.annotations.iam\\.gke\\.io/gcp-service-account=nm@p.iam.gserviceaccount.com")
    accounts = {sa["metadata"]["name"]: sa for sa in r.kinds("ServiceAccount")}
    assert set(accounts) == {"nodemedic-agent", "healer"}
    assert accounts["healer"]["metadata"]["annotations"] == {
        "iam.gke.io/gcp-service-account": "nm@p.iam.gserviceaccount.com"}
    assert "annotations" not in accounts["nodemedic-agent"]["metadata"]
    assert r.pod_spec()["serviceAccountName"] == "healer"
    assert {name for binding, name, _ in subjects(r) if "remediator" in binding} == {"healer"}


@pytest.mark.parametrize("component", ["agent", "remediator"])
def test_an_existing_service_account_without_a_name_is_refused_with_the_reason(component: str) -> None:
    message = refused(f"{component}.serviceAccount.create=false")
    assert f"{component}.serviceAccount.name: required when {component}.serviceAccount.create is false" in message


# --- topology spread ----------------------------------------------------------------------------------
def test_topology_spread_constraints_reach_the_remediator_with_its_selector_unless_they_have_one() -> None:
    assert "topologySpreadConstraints" not in install().pod_spec()
    spread = "remediator.topologySpreadConstraints"
    r = install(f"{spread}[0].maxSkew=1", f"{spread}[0].topologyKey=topology.kubernetes.io/zone",
                f"{spread}[0].whenUnsatisfiable=ScheduleAnyway",
                f"{spread}[1].maxSkew=2", f"{spread}[1].topologyKey=kubernetes.io/hostname",
                f"{spread}[1].whenUnsatisfiable=DoNotSchedule", f"{spread}[1].labelSelector.matchLabels.team=infra")
    assert r.pod_spec()["topologySpreadConstraints"] == [
        {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway",
         "labelSelector": {"matchLabels": r.one("Deployment")["spec"]["selector"]["matchLabels"]}},
        {"maxSkew": 2, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"team": "infra"}}},
    ]
    assert "topologySpreadConstraints" not in r.one("DaemonSet")["spec"]["template"]["spec"]


# --- the priority-class quota -----------------------------------------------------------------------------
QUOTA = {
    # values, namespace -> rendered?
    "default": ([], "nodemedic", True),
    "opted-out": (["priorityClassQuota.create=false"], "nodemedic", False),
    "in-kube-system": ([], "kube-system", False),
    "no-system-class": (["agent.priorityClassName=nodemedic-high", "remediator.priorityClassName="], "nodemedic",
                        False),
    "only-the-agent-s-class": (["remediator.priorityClassName="], "nodemedic", True),
}


@pytest.mark.parametrize(("values", "namespace", "rendered"), QUOTA.values(), ids=QUOTA.keys())
def test_the_priority_class_quota_is_rendered_exactly_where_a_system_class_is_used_outside_kube_system(
        values: list[str], namespace: str, rendered: bool) -> None:
    r = install(*values, namespace=namespace)
    quotas = r.kinds("ResourceQuota")
    assert bool(quotas) is rendered
    assert ("ResourceQuota nodemedic-critical-pods" in r.notes) is rendered
    if rendered:
        (quota,) = quotas
        assert quota["metadata"] == {**quota["metadata"], "name": "nodemedic-critical-pods", "namespace": namespace}
        assert quota["spec"] == {"hard": {"pods": "100000"}, "scopeSelector": {"matchExpressions": [
            {"scopeName": "PriorityClass", "operator": "In", "values": SYSTEM_CLASSES}]}}


def test_the_priority_class_quota_s_pod_count_is_a_value() -> None:
    (quota,) = install("priorityClassQuota.pods=250").kinds("ResourceQuota")
    assert quota["spec"]["hard"] == {"pods": "250"}


# --- the viewer roles -------------------------------------------------------------------------------------
def test_the_viewer_roles_are_read_only_and_bound_only_to_the_groups_named() -> None:
    r = install(release="ops", namespace="tools")
    assert r.one("ClusterRole", "ops-nodemedic-viewer")["rules"] == [
        {"apiGroups": [""], "resources": ["nodes", "pods"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ["get", "list", "watch"]},
    ]
    role = r.one("Role", "ops-nodemedic-viewer")
    assert role["metadata"]["namespace"] == "tools"
    assert role["rules"] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["pods/proxy"], "verbs": ["get"]},
        {"apiGroups": ["nodemedic.io"], "resources": ["migrations"], "verbs": ["get", "list"]},
        {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["ops-nodemedic-remediator-savings"],
         "verbs": ["get"]},
    ]
    assert [b for b in r.kinds("ClusterRoleBinding") + r.kinds("RoleBinding") if "viewer" in b["metadata"]["name"]
            ] == []
    assert "bound to no one (rbac.viewerGroups)" in r.notes

    r = install("rbac.viewerGroups={sre,oncall}", release="ops", namespace="tools")
    groups = [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g} for g in ("sre", "oncall")]
    binding = r.one("ClusterRoleBinding", "ops-nodemedic-viewer")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                  "name": "ops-nodemedic-viewer"}
    assert binding["subjects"] == groups
    binding = r.one("RoleBinding", "ops-nodemedic-viewer")
    assert binding["metadata"]["namespace"] == "tools" and binding["subjects"] == groups
    assert binding["roleRef"]["kind"] == "Role"
    assert "bound to the groups sre, oncall" in r.notes


def test_only_the_approver_role_may_patch_migrations_and_it_is_bound_only_to_the_groups_named() -> None:
    r = install(release="ops", namespace="tools")
    role = r.one("Role", "ops-nodemedic-approver")
    assert role["metadata"]["namespace"] == "tools" and role["rules"] == [
        {"apiGroups": ["nodemedic.io"], "resources": ["migrations"], "verbs": ["get", "list", "patch"]}]
    patchers = sorted(d["metadata"]["name"] for d in r.kinds("Role") + r.kinds("ClusterRole")
                      for rule in d["rules"] if "migrations" in rule["resources"] and "patch" in rule["verbs"])
    assert patchers == ["ops-nodemedic-approver"], "the remediator patches migrations/status only"
    assert [b for b in r.kinds("ClusterRoleBinding") + r.kinds("RoleBinding") if "approver" in b["metadata"]["name"]
            ] == []
    r = install("rbac.approverGroups={capacity}", release="ops", namespace="tools")
    for kind in ("RoleBinding", "ClusterRoleBinding"):
        assert r.one(kind, "ops-nodemedic-approver")["subjects"] == [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "capacity"}]


def test_an_agent_extra_file_with_a_bad_name_is_refused_with_the_reason() -> None:
    assert 'agent.extraFiles: "a/b" is not a ConfigMap key' in refused("agent.extraFiles.a/b=x")
    assert "agent.yaml is the agent config itself: set agent.config instead" in refused(
        "agent.extraFiles.agent\\.yaml=x")


def test_an_agent_config_with_repair_off_renders_no_node_watch_grant_and_no_host_pid_namespace() -> None:
    def agent(r: Release) -> tuple[list[str], bool]:
        (nodes,) = [rule for rule in r.one("ClusterRole", "nodemedic-agent")["rules"] if rule["resources"] == ["nodes"]]
        return nodes["verbs"], r.one("DaemonSet")["spec"]["template"]["spec"].get("hostPID", False)

    assert agent(install()) == (["get", "list", "watch"], True)
    assert agent(install("agent.config=repair:\n  enabled: false\n")) == (["get"], False)
    assert agent(install("agent.config=heartbeat: 5m\n")) == (["get", "list", "watch"], True)  # the code's default


# --- the NetworkPolicy ------------------------------------------------------------------------------------
def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A NetworkPolicy podSelector (matchLabels only, which is all the chart writes) against a pod's labels."""
    assert set(selector) <= {"matchLabels"}, selector
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


def pods(r: Release) -> dict[str, tuple[dict[str, str], dict[str, Any]]]:
    """(labels, spec) of the pods the chart makes, by workload."""
    out = {f"DaemonSet/{d['metadata']['name']}": d["spec"]["template"] for d in r.kinds("DaemonSet")}
    out |= {f"Deployment/{d['metadata']['name']}": d["spec"]["template"] for d in r.kinds("Deployment")}
    out |= {f"CronJob/{d['metadata']['name']}": d["spec"]["jobTemplate"]["spec"]["template"]
            for d in r.kinds("CronJob")}
    return {name: (t["metadata"]["labels"], t["spec"]) for name, t in out.items()}


@pytest.mark.parametrize("mode", ["deployment", "cronjob"])
def test_the_network_policy_selects_exactly_the_remediator_pods_and_admits_their_port_from_the_listed_peers(
        mode: str) -> None:
    r = install(f"remediator.mode={mode}", "networkPolicy.apiServerCIDRs={10.0.0.10/32,fd00::10/128}",
                "remediator.port=9090")
    policy = r.one("NetworkPolicy")
    assert policy["metadata"]["name"] == "nodemedic-remediator"
    selected = {name for name, (labels, _) in pods(r).items() if selects(policy["spec"]["podSelector"], labels)}
    assert selected == {f"{'Deployment' if mode == 'deployment' else 'CronJob'}/nodemedic-remediator"}, pods(r)
    (_, agent_spec), = [p for name, p in pods(r).items() if name.startswith("DaemonSet/")]
    assert agent_spec["hostNetwork"] is True  # why the agent needs no policy: none applies in the host network
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    (rule,) = policy["spec"]["ingress"]
    (_, spec), = [p for name, p in pods(r).items() if name in selected]
    if mode == "deployment":  # the port the rule opens is the one the pod serves on and the Service scrapes
        assert rule["ports"] == [{"port": 9090, "protocol": "TCP"}]
        assert {"name": "metrics", "containerPort": 9090, "protocol": "TCP"} in spec["containers"][0]["ports"]
    assert rule["from"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
         "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}},
        {"ipBlock": {"cidr": "10.0.0.10/32"}}, {"ipBlock": {"cidr": "fd00::10/128"}}]
    assert "apiServerCIDRs" not in r.notes


def test_the_network_policy_follows_the_release_name_so_two_releases_do_not_select_each_other() -> None:
    r = install(release="ops")
    policy = r.one("NetworkPolicy")
    assert policy["metadata"]["name"] == "ops-nodemedic-remediator"
    assert policy["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/instance"] == "ops"
    assert not selects(policy["spec"]["podSelector"], pods(install())["Deployment/nodemedic-remediator"][0])


def test_the_network_policy_can_be_widened_emptied_or_left_out_and_the_notes_say_when_the_plugin_is_shut_out() -> None:
    default = install()
    assert "networkPolicy.apiServerCIDRs" in default.notes  # no API server address: the plugin cannot reach it
    widened = install("networkPolicy.extraFrom[0].namespaceSelector.x=y")
    assert widened.one("NetworkPolicy")["spec"]["ingress"][0]["from"][-1] == {
        "namespaceSelector": {"x": "y"}}
    closed = install("networkPolicy.scrapers=null")
    assert closed.one("NetworkPolicy")["spec"]["ingress"] == []  # nothing listed: nothing admitted, not everything
    assert install("networkPolicy.enabled=false").kinds("NetworkPolicy") == []
    assert "networkPolicy.apiServerCIDRs" not in install("networkPolicy.enabled=false").notes


@pytest.mark.parametrize(("value", "error"), [
    ("networkPolicy.apiServerCIDRs={10.0.0.1}", "does not match pattern"),
    ("networkPolicy.scrapers[0].podSelectr.x=y", "podSelectr"),
])
def test_the_schema_refuses_a_network_policy_peer_it_does_not_know(value: str, error: str) -> None:
    assert error in refused(value)


def test_the_schema_s_log_levels_are_the_ones_both_programs_take() -> None:
    """The chart passes logLevel as --log-level: a level the schema allows and the programs refuse would crash-loop
    a pod, one they take and the schema refuses could not be set."""
    assert json.loads(SCHEMA.read_text())["definitions"]["logLevel"]["enum"] == list(logs.LEVELS)
