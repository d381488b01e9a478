"""The chart's landing admission policy (deploy/helm/nodemedic/templates/landing-policy.yaml, as rendered into
deploy/manifests/nodemedic.yaml) installed for a test's remediator: the Landing CRD and the policy as the chart ships
them, and a binding of its own reading the Landings of LANDING_NAMESPACE, where the remediator holds its Lease
(`--lease-namespace LANDING_NAMESPACE`, with a Lease of its own: `own_lease`).

Made once per cluster and kept, so tests sharing a cluster share them. (With ConfigMaps as the policy's parameters, the
API server froze its watch of ConfigMaps the first time no binding named them, kubernetes/kubernetes#130887: a binding
made after a chart test's uninstall never pinned a pod, the stop-52 CI failure. The Landing kind has a watch of its own,
made again whenever a binding names it again.)"""

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
GROUP_LANDING = "nodemedic.io"


def shipped_all(kind: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(MANIFEST.read_text()) if isinstance(d, dict) and d.get("kind") == kind]


def shipped(kind: str) -> dict[str, Any]:
    docs = shipped_all(kind)
    assert len(docs) == 1, f"{MANIFEST} holds {len(docs)} {kind}s, not one"
    return docs[0]


def own_lease(name: str) -> list[str]:
    """A remediator's own Lease among the tests' in LANDING_NAMESPACE."""
    return ["--lease-name", f"landing-{name}"[:63]]


class LandingPolicy:
    """The shipped CRD and policy applied and bound to LANDING_NAMESPACE, made once per cluster and never deleted, and
    in effect before the test goes on."""

    def __init__(self, api: client.ApiClient) -> None:
        self.objects = client.CustomObjectsApi(api)
        core = client.CoreV1Api(api)
        self._apply_crd(client.ApiextensionsV1Api(api))
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

    @staticmethod
    def _apply_crd(extensions: client.ApiextensionsV1Api) -> None:
        """The chart's CRDs: the Landings the policy reads, and the Migrations the remediator runs on them."""
        for crd in shipped_all("CustomResourceDefinition"):
            try:
                extensions.create_custom_resource_definition(crd)
            except ApiException as e:
                if e.status != 409:
                    raise
            wait_until(lambda crd=crd: any(
                c.type == "Established" and c.status == "True"
                for c in extensions.read_custom_resource_definition(crd["metadata"]["name"]).status.conditions or ()),
                timeout=30, what=f"{crd['metadata']['name']} established")

    def _apply(self, plural: str, obj: dict[str, Any]) -> None:
        """Made once per cluster and then left as it is (see the module's docstring)."""
        try:
            self.objects.create_cluster_custom_object(GROUP, VERSION, plural, obj)
        except ApiException as e:
            if e.status != 409:
                raise

    def await_active(self, core: client.CoreV1Api) -> None:
        """Until the API server applies the binding: a server-side dry run of a pod of a probe owner comes back pinned
        (a binding is picked up a moment after it is made, and a move made before would land unpinned: a run saw both
        moves of the balancing case `unguided`). Up to a minute: the API server maps a new CRD's kind for a policy's
        parameters when it next reads its discovery, every 30 s."""
        self.open("landing-probe", "landing-probe-uid", "probe-host")
        try:
            wait_until(lambda: pinned_to(core, "landing-probe-uid") == "probe-host", timeout=60,
                       what=f"the landing policy's binding for {LANDING_NAMESPACE} in effect")
        finally:
            self.close("landing-probe")

    def open(self, name: str, owner_uid: str, hostname: str) -> None:
        """A Landing as the remediator makes one, for a workload of LANDING_NAMESPACE."""
        self.objects.create_namespaced_custom_object(GROUP_LANDING, "v1alpha1", LANDING_NAMESPACE, "landings", {
            "apiVersion": f"{GROUP_LANDING}/v1alpha1", "kind": "Landing", "metadata": {"name": name},
            "spec": {"namespace": LANDING_NAMESPACE, "ownerUID": owner_uid, "hostname": hostname,
                     "annotation": name}})

    def close(self, name: str) -> None:
        self.objects.delete_namespaced_custom_object(GROUP_LANDING, "v1alpha1", LANDING_NAMESPACE, "landings", name)

    def stop(self) -> None:
        """Leaves the binding: with no Landing in LANDING_NAMESPACE it changes no pod."""


def pinned_to(core: client.CoreV1Api, owner_uid: str) -> str | None:
    """The hostname a pod of the workload `owner_uid` in LANDING_NAMESPACE would be pinned to if made now (a
    server-side dry run: nothing is stored)."""
    pod = {"metadata": {"generateName": "landing-probe-", "ownerReferences": [
               {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "probe", "uid": owner_uid}]},
           "spec": {"containers": [{"name": "c", "image": "registry.invalid/app:1"}]}}
    made = core.create_namespaced_pod(LANDING_NAMESPACE, pod, dry_run="All")
    return (made.spec.node_selector or {}).get("kubernetes.io/hostname")
