"""A network partition between a kwok node and the API server, made by admission: the node goes dark for the
control plane the way a machine cut off by the network does, without touching kwok or the rest of the cluster.

kwok renews every node's Lease and posts its status whatever its annotations say (it keeps a node it once managed),
so a kwok node cannot be made dark by asking kwok. Instead two ValidatingAdmissionPolicies refuse, for a node named in
the ConfigMap kube-system/nodemedic-e2e-partitioned, what its kubelet would send: a Lease renewal (any change of the
Lease's spec) and a status that says Ready=True. The node lifecycle controller's own writes (Ready=Unknown, the
unreachable taint) go through, as they do for a real partitioned node; `mend` takes the node out of the ConfigMap and
kwok's next renewal brings the node back. kwok still finishes the deletion of a partitioned node's pods (its pod
stages are not the node's heartbeat): the real node (hack/kcp/realnode.py) is where pods stay Terminating.
"""

from __future__ import annotations

import time
from typing import Any

from hack.kcp.api import Api, ApiError

# The partitioned nodes: the keys of this ConfigMap (the policies' parameter). Nothing on the node or its Lease
# changes: the node lifecycle controller sees a Lease that simply stops being renewed, as for a dead kubelet.
NAMESPACE, CONFIGMAP = "kube-system", "nodemedic-e2e-partitioned"
_CUT = "has(params.data) && object.metadata.name in params.data"
POLICIES: dict[str, dict[str, Any]] = {
    "nodemedic-e2e-partitioned-lease": {
        "resourceRules": [{"apiGroups": ["coordination.k8s.io"], "apiVersions": ["*"], "resources": ["leases"],
                           "operations": ["UPDATE"]}],
        "expression": f"!({_CUT}) || object.spec == oldObject.spec",
        "message": "partitioned (e2e): the node's Lease is not renewed",
    },
    "nodemedic-e2e-partitioned-status": {
        "resourceRules": [{"apiGroups": [""], "apiVersions": ["*"], "resources": ["nodes/status"],
                           "operations": ["UPDATE"]}],
        "expression": f"!({_CUT}) || !has(object.status.conditions) || "
                      "!object.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')",
        "message": "partitioned (e2e): the node's status does not reach the API server",
    },
}


def install(api: Api) -> None:
    """The two policies and their bindings (idempotent): they act on labelled objects only."""
    base = "/apis/admissionregistration.k8s.io/v1"
    try:
        api.post(f"/api/v1/namespaces/{NAMESPACE}/configmaps",
                 {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": CONFIGMAP, "namespace": NAMESPACE}})
    except ApiError as e:
        if e.status != 409:
            raise
    for name, p in POLICIES.items():
        policy = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
                  "metadata": {"name": name},
                  "spec": {"failurePolicy": "Fail", "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                           "matchConstraints": {"resourceRules": p["resourceRules"]},
                           "validations": [{"expression": p["expression"], "message": p["message"]}]}}
        binding = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
                   "metadata": {"name": name},
                   "spec": {"policyName": name, "validationActions": ["Deny"],
                            "paramRef": {"name": CONFIGMAP, "namespace": NAMESPACE,
                                         "parameterNotFoundAction": "Allow"}}}
        for path, body in ((f"{base}/validatingadmissionpolicies", policy),
                           (f"{base}/validatingadmissionpolicybindings", binding)):
            try:
                api.post(path, body)
            except ApiError as e:
                if e.status != 409:  # there already
                    raise


def _set(api: Api, node: str, value: str | None) -> None:
    api.request("PATCH", f"/api/v1/namespaces/{NAMESPACE}/configmaps/{CONFIGMAP}", {"data": {node: value}},
                content_type="application/merge-patch+json")


def cut(api: Api, node: str) -> None:
    """From now on the node's Lease is not renewed and its status not posted: Ready=Unknown after the grace period."""
    _set(api, node, "partitioned")


def mend(api: Api, node: str) -> None:
    """The node reconnects: its Lease is renewed again, and kwok (which gave up posting its status while refused)
    posts Ready at the node's next change, here an annotation with the time of the mend."""
    _set(api, node, None)
    try:
        api.request("PATCH", f"/api/v1/nodes/{node}",
                    {"metadata": {"annotations": {"e2e.nodemedic.io/partition-mended": f"{time.time():.0f}"}}},
                    content_type="application/merge-patch+json")
    except ApiError as e:
        if e.status != 404:  # a node deleted meanwhile (replaced) has nothing to reconnect
            raise
