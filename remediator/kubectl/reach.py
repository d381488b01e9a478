"""Find the leading remediator and read it through the API server's pod proxy, with the user's credentials.

The chart labels the remediator's pods `app.kubernetes.io/component=remediator`; their arguments name the Lease
(`--lease-name`) and the HTTP port (`--listen`). The Lease's holder identity is `<pod name>_<8 hex>`
(remediator/cli.py), so the holder's pod answers for the leader, if it is one of the remediator pods found (anyone
who may update the Lease writes its holder). Read-only: nodes, pods, the Lease and `pods/proxy` (the chart's viewer
role). What the leader answers is read to at most MAX_ANSWER bytes and checked as it is read (remediator/read_side).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote

from nodemedic_common.kube_client import Kube
from nodemedic_common.kube_errors import ApiError, TooLarge
from remediator import __version__
from remediator.kubectl import hops
from remediator.kubectl.names import DNS_SUBDOMAIN, PORT
from remediator.read_side.fields import Unreadable

T = TypeVar("T")
MAX_ANSWER = 16 << 20  # bytes: a plan of 15,000 pods with an eviction for each is about 4 MiB
ANSWER_TIMEOUT = 30.0  # seconds for the leader's answer through the proxy

REMEDIATOR_SELECTOR = "app.kubernetes.io/component=remediator"
AGENT_SELECTOR = "app.kubernetes.io/component=agent"


class NotFound(Exception):
    """What the plugin needs is not there: the message says what, where, and what to try."""


class Misunderstood(Exception):
    """The leader answered, but not in a shape this plugin reads (or over its size bound)."""


@dataclass(frozen=True)
class Leader:
    namespace: str
    pod: str
    port: str
    lease: str
    identity: str
    renewed: str  # the Lease's renewTime, as the API gives it


async def remediator_pods(kube: Kube, namespace: str) -> list[dict[str, Any]]:
    """The remediator's pods in `namespace` (at least one: NotFound otherwise); their arguments name what it uses."""
    items = _items(await kube.get(f"/api/v1/namespaces/{namespace}/pods", labelSelector=REMEDIATOR_SELECTOR))
    if not items:
        raise NotFound(f"no remediator pod in namespace {namespace} (label {REMEDIATOR_SELECTOR}); "
                       "is nodemedic installed there? (-n NAMESPACE)")
    return items


async def find_leader(kube: Kube, namespace: str) -> Leader:
    items = await remediator_pods(kube, namespace)
    args = pod_args(items[0])
    lease, listen = args.get("--lease-name"), args.get("--listen")
    if "--once" in args:
        raise NotFound(f"the remediator in {namespace} runs as a CronJob (run --once): it serves nothing between "
                       "runs; read the last Job's log instead")
    if lease is None or not listen:
        raise NotFound(f"the remediator pods in {namespace} have no --lease-name or --listen argument")
    port = listen.rsplit(":", 1)[-1]
    if not DNS_SUBDOMAIN.fullmatch(lease) or not PORT.fullmatch(port):
        raise NotFound(f"the remediator pods in {namespace} name no Lease and port this plugin can read "
                       f"(--lease-name={lease!r}, --listen={listen!r})")
    doc = await kube.get(f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{lease}")
    spec = doc.get("spec") if isinstance(doc, dict) else None
    spec = spec if isinstance(spec, dict) else {}
    identity = str(spec.get("holderIdentity") or "")
    if not identity:
        raise NotFound(f"Lease {namespace}/{lease} has no holder: no remediator leads yet")
    pod = identity.rsplit("_", 1)[0]
    found = {str(name) for p in items if isinstance(meta := p.get("metadata"), dict) and (name := meta.get("name"))}
    if pod not in found or not DNS_SUBDOMAIN.fullmatch(pod):
        raise NotFound(f"the holder of Lease {namespace}/{lease}, {identity!r}, is not one of the remediator pods in "
                       f"{namespace} ({', '.join(sorted(found))}): not read as the leader (whoever may update the "
                       "Lease wrote it)")
    return Leader(namespace, pod, port, lease, identity, str(spec.get("renewTime") or ""))


def pod_args(pod: dict[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    spec = pod.get("spec")
    containers = spec.get("containers") if isinstance(spec, dict) else None
    for container in containers if isinstance(containers, list) else []:
        args = container.get("args") if isinstance(container, dict) else None
        for arg in args if isinstance(args, list) else []:
            if isinstance(arg, str) and arg.startswith("--"):
                key, _, value = arg.partition("=")
                out[key] = value
    return out


async def answer(kube: Kube, leader: Leader, path: str, read: Callable[[object], T], *,
                 leader_version: str | None = None) -> tuple[T, object]:
    """GET `path` (/status, /plan, /why/NODE) from the leading remediator through the pod proxy, read with `read`:
    the typed answer and the document as it came. Misunderstood for an answer `read` refuses, not JSON, or over
    MAX_ANSWER bytes (saying so when `leader_version`, from its /status, is not this plugin's); HopFailed naming the
    hop that failed."""
    try:
        try:
            doc = await kube.request("GET", f"/api/v1/namespaces/{leader.namespace}/pods/{leader.pod}:{leader.port}"
                                     f"/proxy{path}", limit=MAX_ANSWER, timeout=ANSWER_TIMEOUT)
        except TooLarge:
            raise Unreadable(f"{path}: over {MAX_ANSWER >> 20} MiB (not read further)") from None
        except ApiError as e:
            if e.status == 403:
                raise NotFound(f"not allowed to read pods/proxy in {leader.namespace}: ask for the chart's viewer "
                               f"role (rbac.viewerGroups): {e.message}") from None
            if 0 < e.status < 400:  # it answered, but not JSON
                raise Unreadable(f"{path}: {e.message}") from None
            raise hops.proxied(e, leader.pod, leader.port, path, ANSWER_TIMEOUT) from None
        return read(doc), doc
    except Unreadable as e:
        versions = f" (the leader runs version {leader_version}, this plugin {__version__}: use the plugin of the " \
                   "leader's version)" if leader_version not in (None, __version__) else ""
        raise Misunderstood(f"the leader {leader.pod} answered something this plugin does not understand: {e}"
                            f"{versions}") from None


def _items(doc: object) -> list[dict[str, Any]]:
    """The objects of a LIST answer (anything else in it is not one)."""
    items = doc.get("items") if isinstance(doc, dict) else None
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


async def node(kube: Kube, name: str) -> dict[str, Any]:
    try:
        doc = await kube.get(f"/api/v1/nodes/{quote(name, safe='')}")
    except ApiError as e:
        if e.status == 404:
            raise NotFound(f"no node {name}") from None
        raise
    if not isinstance(doc, dict):
        raise NotFound(f"the API server's answer for node {name} is not an object")
    return doc


async def nodes(kube: Kube) -> list[dict[str, Any]]:
    return _items(await kube.get("/api/v1/nodes"))


async def agent_pod(kube: Kube, namespace: str, node_name: str) -> dict[str, Any] | None:
    pods = await kube.get(f"/api/v1/namespaces/{namespace}/pods", labelSelector=AGENT_SELECTOR,
                          fieldSelector=f"spec.nodeName={node_name}")
    items = _items(pods)
    return items[0] if items else None
