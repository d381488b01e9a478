"""Find the leading remediator and read it through the API server's pod proxy, with the user's credentials.

The chart labels the remediator's pods `app.kubernetes.io/component=remediator`; their arguments name the Lease
(`--lease-name`) and the HTTP port (`--listen`). The Lease's holder identity is `<pod name>_<8 hex>`
(remediator/cli.py), so the holder's pod answers for the leader. Read-only: nodes, pods, the Lease and `pods/proxy`
(the chart's viewer role).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from nodemedic_common.kube_client import Kube
from nodemedic_common.kube_errors import ApiError

REMEDIATOR_SELECTOR = "app.kubernetes.io/component=remediator"
AGENT_SELECTOR = "app.kubernetes.io/component=agent"


class NotFound(Exception):
    """What the plugin needs is not there: the message says what, where, and what to try."""


@dataclass(frozen=True)
class Leader:
    namespace: str
    pod: str
    port: str
    lease: str
    identity: str
    renewed: str  # the Lease's renewTime, as the API gives it


async def find_leader(kube: Kube, namespace: str) -> Leader:
    pods = await kube.get(f"/api/v1/namespaces/{namespace}/pods", labelSelector=REMEDIATOR_SELECTOR)
    items = [p for p in pods.get("items") or [] if isinstance(p, dict)]
    if not items:
        raise NotFound(f"no remediator pod in namespace {namespace} (label {REMEDIATOR_SELECTOR}); "
                       "is nodemedic installed there? (-n NAMESPACE)")
    args = _args(items[0])
    lease, listen = args.get("--lease-name"), args.get("--listen")
    if "--once" in args:
        raise NotFound(f"the remediator in {namespace} runs as a CronJob (run --once): it serves nothing between "
                       "runs; read the last Job's log instead")
    if lease is None or not listen:
        raise NotFound(f"the remediator pods in {namespace} have no --lease-name or --listen argument")
    doc = await kube.get(f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{lease}")
    spec = doc.get("spec") or {}
    identity = str(spec.get("holderIdentity") or "")
    if not identity:
        raise NotFound(f"Lease {namespace}/{lease} has no holder: no remediator leads yet")
    pod = identity.rsplit("_", 1)[0]
    return Leader(namespace, pod, listen.rsplit(":", 1)[-1], lease, identity, str(spec.get("renewTime") or ""))


def _args(pod: dict[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for container in (pod.get("spec") or {}).get("containers") or []:
        for arg in container.get("args") or []:
            if isinstance(arg, str) and arg.startswith("--"):
                key, _, value = arg.partition("=")
                out[key] = value
    return out


async def ask(kube: Kube, leader: Leader, path: str) -> Any:
    """GET `path` (/status, /plan, /why/NODE) from the leading remediator through the pod proxy."""
    try:
        return await kube.get(f"/api/v1/namespaces/{leader.namespace}/pods/{leader.pod}:{leader.port}/proxy{path}")
    except ApiError as e:
        if e.status == 403:
            raise NotFound(f"not allowed to read pods/proxy in {leader.namespace}: ask for the chart's viewer role "
                           f"(rbac.viewerGroups): {e.message}") from None
        raise


async def node(kube: Kube, name: str) -> dict[str, Any]:
    try:
        doc: dict[str, Any] = await kube.get(f"/api/v1/nodes/{quote(name, safe='')}")
    except ApiError as e:
        if e.status == 404:
            raise NotFound(f"no node {name}") from None
        raise
    return doc


async def nodes(kube: Kube) -> list[dict[str, Any]]:
    return [n for n in (await kube.get("/api/v1/nodes")).get("items") or [] if isinstance(n, dict)]


async def agent_pod(kube: Kube, namespace: str, node_name: str) -> dict[str, Any] | None:
    pods = await kube.get(f"/api/v1/namespaces/{namespace}/pods", labelSelector=AGENT_SELECTOR,
                          fieldSelector=f"spec.nodeName={node_name}")
    items = [p for p in pods.get("items") or [] if isinstance(p, dict)]
    return items[0] if items else None
