"""The chart's landing admission policy (deploy/helm/nodemedic/templates/landing-policy.yaml, as rendered into
deploy/manifests/nodemedic.yaml) installed for a test's remediator: the policy as the chart ships it, and a binding of
its own reading the landing ConfigMaps of LANDING_NAMESPACE, where the remediator holds its Lease (`--lease-namespace
LANDING_NAMESPACE`, with a Lease of its own: `own_lease`).

Why one namespace that is never deleted, not each test's own: on the pinned API server (v1.37.2), once a namespace a
binding's paramRef named has been deleted, no binding made afterwards takes effect (tried on the local control plane:
bindings for three namespaces in a row each took effect within 1.2 s while their namespaces were kept; after the first
namespace was deleted, the next two never did within 30 s, nor after the policy itself was deleted and made again).
Nor did a binding made again after one was deleted, once other namespaces had been deleted meanwhile (the
fragmentation module: its first test's pools go between its tests): so the binding is made once per cluster and kept.
The chart's binding names the release namespace, and both live as long as the installation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.waiting import wait_until

MANIFEST = Path(__file__).resolve().parents[2] / "deploy" / "manifests" / "nodemedic.yaml"
GROUP, VERSION = "admissionregistration.k8s.io", "v1"
LANDING_NAMESPACE = "nodemedic-landing"


def shipped(kind: str) -> dict[str, Any]:
    docs = [d for d in yaml.safe_load_all(MANIFEST.read_text()) if isinstance(d, dict) and d.get("kind") == kind]
    assert len(docs) == 1, f"{MANIFEST} holds {len(docs)} {kind}s, not one"
    return docs[0]


def own_lease(name: str) -> list[str]:
    """A remediator's own Lease among the tests' in LANDING_NAMESPACE."""
    return ["--lease-name", f"landing-{name}"[:63]]


class LandingPolicy:
    """The shipped policy applied and bound to LANDING_NAMESPACE, both made once per cluster and never deleted, and in
    effect before the test goes on."""

    def __init__(self, api: client.ApiClient) -> None:
        self.objects = client.CustomObjectsApi(api)
        core = client.CoreV1Api(api)
        try:
            core.create_namespace({"metadata": {"name": LANDING_NAMESPACE}})
        except ApiException as e:
            if e.status != 409:
                raise
        wait_until(lambda: core.list_namespaced_service_account(LANDING_NAMESPACE).items, timeout=30,
                   what=f"{LANDING_NAMESPACE}/default SA")
        self._apply("mutatingadmissionpolicies", shipped("MutatingAdmissionPolicy"))
        binding = shipped("MutatingAdmissionPolicyBinding")
        self.binding = f"{binding['metadata']['name']}-{LANDING_NAMESPACE}"
        binding["metadata"]["name"] = self.binding
        binding["spec"]["paramRef"]["namespace"] = LANDING_NAMESPACE
        self._apply("mutatingadmissionpolicybindings", binding)
        self.await_active(core)

    def _apply(self, plural: str, obj: dict[str, Any]) -> None:
        """Made once per cluster and then left as it is (see the module's docstring)."""
        try:
            self.objects.create_cluster_custom_object(GROUP, VERSION, plural, obj)
        except ApiException as e:
            if e.status != 409:
                raise

    @staticmethod
    def await_active(core: client.CoreV1Api) -> None:
        """Until the API server applies the binding: a server-side dry run of a pod of a probe owner comes back pinned
        (a binding is picked up a moment after it is made, and a move made before would land unpinned: a run saw both
        moves of the balancing case `unguided`)."""
        probe = {"metadata": {"name": "landing-probe", "labels": {"nodemedic.io/landing": "true"}},
                 "data": {"namespace": LANDING_NAMESPACE, "ownerUID": "landing-probe-uid", "hostname": "probe-host",
                          "annotation": "probe"}}
        core.create_namespaced_config_map(LANDING_NAMESPACE, probe)
        pod = {"metadata": {"generateName": "landing-probe-", "ownerReferences": [
                   {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "probe", "uid": "landing-probe-uid"}]},
               "spec": {"containers": [{"name": "c", "image": "registry.invalid/app:1"}]}}
        try:
            wait_until(lambda: (core.create_namespaced_pod(LANDING_NAMESPACE, pod, dry_run="All").spec.node_selector
                                or {}).get("kubernetes.io/hostname") == "probe-host", timeout=30,
                       what=f"the landing policy's binding for {LANDING_NAMESPACE} in effect")
        finally:
            core.delete_namespaced_config_map("landing-probe", LANDING_NAMESPACE)

    def stop(self) -> None:
        """Leaves the binding: with no landing ConfigMap in LANDING_NAMESPACE it changes no pod."""
