"""The chart's landing admission policy (deploy/helm/nodemedic/templates/landing-policy.yaml, as rendered into
deploy/manifests/nodemedic.yaml) installed for a test whose remediator runs with `--lease-namespace NAMESPACE`: the
policy as the chart ships it, and a binding of its own reading that namespace's landing ConfigMaps (the chart's binding
reads the release namespace)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.waiting import wait_until

MANIFEST = Path(__file__).resolve().parents[2] / "deploy" / "manifests" / "nodemedic.yaml"
GROUP, VERSION = "admissionregistration.k8s.io", "v1"


def shipped(kind: str) -> dict[str, Any]:
    docs = [d for d in yaml.safe_load_all(MANIFEST.read_text()) if isinstance(d, dict) and d.get("kind") == kind]
    assert len(docs) == 1, f"{MANIFEST} holds {len(docs)} {kind}s, not one"
    return docs[0]


class LandingPolicy:
    """The shipped policy applied (idempotent: every test applies the same object) and bound to `namespace` until
    `stop` (a test's `processes` stops it, whatever the outcome)."""

    def __init__(self, api: client.ApiClient, namespace: str) -> None:
        self.objects = client.CustomObjectsApi(api)
        policy = shipped("MutatingAdmissionPolicy")
        try:
            self.objects.create_cluster_custom_object(GROUP, VERSION, "mutatingadmissionpolicies", policy)
        except ApiException as e:
            if e.status != 409:
                raise
            current = self.objects.get_cluster_custom_object(GROUP, VERSION, "mutatingadmissionpolicies",
                                                             policy["metadata"]["name"])
            policy["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            self.objects.replace_cluster_custom_object(GROUP, VERSION, "mutatingadmissionpolicies",
                                                       policy["metadata"]["name"], policy)
        binding = shipped("MutatingAdmissionPolicyBinding")
        self.binding = f"{binding['metadata']['name']}-{namespace}"
        binding["metadata"]["name"] = self.binding
        binding["spec"]["paramRef"]["namespace"] = namespace
        self.objects.create_cluster_custom_object(GROUP, VERSION, "mutatingadmissionpolicybindings", binding)
        self.await_active(client.CoreV1Api(api), namespace)

    @staticmethod
    def await_active(core: client.CoreV1Api, namespace: str) -> None:
        """Until the API server applies the new binding with a ConfigMap of that namespace: a server-side dry run of a
        pod of a probe owner comes back pinned (a binding is picked up by the API server a moment after it is made,
        and a move made before would land unpinned: a run saw both moves of the balancing case `unguided`)."""
        probe = {"metadata": {"name": "landing-probe", "labels": {"nodemedic.io/landing": "true"}},
                 "data": {"namespace": namespace, "ownerUID": "landing-probe-uid", "hostname": "probe-host",
                          "annotation": "probe"}}
        core.create_namespaced_config_map(namespace, probe)
        pod = {"metadata": {"generateName": "landing-probe-", "ownerReferences": [
                   {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "probe", "uid": "landing-probe-uid"}]},
               "spec": {"containers": [{"name": "c", "image": "registry.invalid/app:1"}]}}
        try:
            wait_until(lambda: (core.create_namespaced_pod(namespace, pod, dry_run="All").spec.node_selector or {})
                       .get("kubernetes.io/hostname") == "probe-host", timeout=30,
                       what=f"the landing policy's binding for {namespace} in effect")
        finally:
            core.delete_namespaced_config_map("landing-probe", namespace)

    def stop(self) -> None:
        try:
            self.objects.delete_cluster_custom_object(GROUP, VERSION, "mutatingadmissionpolicybindings", self.binding)
        except ApiException as e:
            if e.status != 404:
                raise
