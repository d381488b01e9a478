"""The chart's landing admission policy on the real API server, where its first version failed: with ConfigMaps as
its parameters, the API server stopped watching ConfigMaps for good the first time no binding named them
(kubernetes/kubernetes#130887), so any admission policy with ConfigMap parameters losing its last binding (a chart
uninstalled: test_deploy's cleanup in the stop-52 CI run) left every landing made afterwards unpinned. Landings are
a kind of our own (deploy/helm/nodemedic/crds/landings.nodemedic.io.yaml), watched apart."""

from __future__ import annotations

import secrets
from collections.abc import Callable

from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.e2e.conftest import LocalCluster
from tests.e2e.landing_harness import LANDING_NAMESPACE, LandingPolicy, pinned_to
from tests.waiting import wait_until

GROUP, VERSION = "admissionregistration.k8s.io", "v1"


def admitted(core: client.CoreV1Api) -> Callable[[], bool]:
    """Whether a PodTemplate in LANDING_NAMESPACE is admitted now (a dry run)."""
    def probe() -> bool:
        try:
            core.create_namespaced_pod_template(LANDING_NAMESPACE, {
                "metadata": {"generateName": "cm-params-probe-"},
                "template": {"spec": {"containers": [{"name": "c", "image": "registry.invalid/app:1"}]}}},
                dry_run="All")
        except ApiException as e:
            if e.status in (400, 403, 422):
                return False
            raise
        return True
    return probe


def test_a_landing_pins_after_another_policy_with_configmap_parameters_lost_its_binding(
        cluster: LocalCluster, core: client.CoreV1Api) -> None:
    landing = LandingPolicy(cluster.api)
    objects = client.CustomObjectsApi(cluster.api)
    tag = secrets.token_hex(3)
    name = f"configmap-params-{tag}"
    # Another policy reading ConfigMaps as parameters: it refuses PodTemplates while its ConfigMap says so.
    objects.create_cluster_custom_object(GROUP, VERSION, "validatingadmissionpolicies", {
        "metadata": {"name": name}, "spec": {
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}, "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                                    "resources": ["podtemplates"]}]},
            "validations": [{"expression": "params.data.refuse != 'yes'", "message": "refused by its ConfigMap"}]}})
    binding = {"metadata": {"name": name}, "spec": {
        "policyName": name, "validationActions": ["Deny"],
        "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": LANDING_NAMESPACE}}},
        "paramRef": {"namespace": LANDING_NAMESPACE, "selector": {"matchLabels": {"configmap-params": tag}},
                     "parameterNotFoundAction": "Allow"}}}
    core.create_namespaced_config_map(LANDING_NAMESPACE, {
        "metadata": {"name": name, "labels": {"configmap-params": tag}}, "data": {"refuse": "yes"}})
    try:
        objects.create_cluster_custom_object(GROUP, VERSION, "validatingadmissionpolicybindings", binding)
        wait_until(lambda: not admitted(core)(), timeout=30, what="the ConfigMap policy in effect (its watch started)")
        # Its last binding gone: the API server's next policy refresh (every second) stops its ConfigMap watch.
        objects.delete_cluster_custom_object(GROUP, VERSION, "validatingadmissionpolicybindings", name)
        wait_until(admitted(core), timeout=30, what="the ConfigMap policy unbound")

        owner = f"owner-{tag}"
        landing.open(f"nodemedic-landing-{tag}00", owner, f"host-{tag}")
        wait_until(lambda: pinned_to(core, owner) == f"host-{tag}", timeout=15,
                   what="a pod of the workload pinned by a Landing made after the ConfigMap watch stopped")
        landing.close(f"nodemedic-landing-{tag}00")
        wait_until(lambda: pinned_to(core, owner) is None, timeout=15, what="the pin gone with the Landing")
        print(f"landing after a ConfigMap-parameter binding came and went: pinned to host-{tag}, then unpinned")
    finally:
        objects.delete_cluster_custom_object(GROUP, VERSION, "validatingadmissionpolicies", name)
        core.delete_namespaced_config_map(name, LANDING_NAMESPACE)
