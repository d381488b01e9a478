"""The chart's landing admission policy installed on a benchmark's cluster, for `eviction.landing: planned`.

As tests/e2e/landing_harness.py does it (hack/ does not import tests/): the Landing and Migration CRDs and the
MutatingAdmissionPolicy as deploy/manifests/nodemedic.yaml ships them, and a binding of its own that reads the
Landings of NAMESPACE, where the remediator keeps its Lease (`--lease-namespace NAMESPACE`). Then wait until the API
server applies the binding: a server-side dry run of a pod of a probe owner comes back pinned to the probe's node
(a move made before would land unpinned).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import yaml

from hack.kcp.api import Api, ApiError

MANIFEST = Path(__file__).resolve().parents[3] / "deploy" / "manifests" / "nodemedic.yaml"
NAMESPACE = "nodemedic-landing"
ADMISSION = "/apis/admissionregistration.k8s.io/v1"
LANDINGS = f"/apis/nodemedic.io/v1alpha1/namespaces/{NAMESPACE}/landings"


def shipped(kind: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(MANIFEST.read_text()) if isinstance(d, dict) and d.get("kind") == kind]


def _create(api: Api, path: str, body: dict[str, Any]) -> None:
    try:
        api.post(path, body)
    except ApiError as e:
        if e.status != 409:  # made by an earlier run on this cluster: kept as it is
            raise


def _until(probe: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not probe():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:g}s")
        time.sleep(0.5)


def install(api: Api, timeout: float = 90.0) -> None:
    for crd in shipped("CustomResourceDefinition"):
        _create(api, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
        name = crd["metadata"]["name"]

        def established(name: str = name) -> bool:
            doc = api.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
            return any(c["type"] == "Established" and c["status"] == "True"
                       for c in (doc.get("status") or {}).get("conditions") or [])
        _until(established, 30, f"CRD {name} established")
    _create(api, "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
    _until(lambda: _exists(api, f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/default"), 30,
           f"ServiceAccount {NAMESPACE}/default")
    (policy,) = shipped("MutatingAdmissionPolicy")
    _create(api, f"{ADMISSION}/mutatingadmissionpolicies", policy)
    (binding,) = shipped("MutatingAdmissionPolicyBinding")
    binding["metadata"]["name"] = f"{binding['metadata']['name']}-{NAMESPACE}"
    binding["spec"]["paramRef"]["namespace"] = NAMESPACE
    _create(api, f"{ADMISSION}/mutatingadmissionpolicybindings", binding)
    # A new CRD's kind is mapped for a policy's parameters when the API server next reads its discovery (every 30 s).
    _create(api, LANDINGS, {"apiVersion": "nodemedic.io/v1alpha1", "kind": "Landing",
                            "metadata": {"name": "landing-probe"},
                            "spec": {"namespace": NAMESPACE, "ownerUID": "landing-probe-uid", "hostname": "probe-host",
                                     "annotation": "landing-probe"}})
    try:
        _until(lambda: _pinned(api) == "probe-host", timeout, f"the landing binding for {NAMESPACE} in effect")
    finally:
        api.request("DELETE", f"{LANDINGS}/landing-probe")


def _exists(api: Api, path: str) -> bool:
    try:
        api.get(path)
    except ApiError:
        return False
    return True


def _pinned(api: Api) -> str | None:
    pod = {"metadata": {"generateName": "landing-probe-", "ownerReferences": [
               {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "probe", "uid": "landing-probe-uid"}]},
           "spec": {"containers": [{"name": "c", "image": "registry.invalid/app:1"}]}}
    made = api.post(f"/api/v1/namespaces/{NAMESPACE}/pods?dryRun=All", pod)
    return (made["spec"].get("nodeSelector") or {}).get("kubernetes.io/hostname")
