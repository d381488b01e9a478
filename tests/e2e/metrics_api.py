"""A small `metrics.k8s.io/v1beta1` server, registered as an APIService so that kube-apiserver proxies to it: the
aggregation path metrics-server uses, with usage the test chooses.

The server speaks TLS with a certificate for `<service>.<namespace>.svc` from a CA of its own (the APIService's
`caBundle`), and accepts only clients holding a certificate from the cluster CA (kube-apiserver's front-proxy client
certificate), as an aggregated API server must. The APIService names an ExternalName Service whose `externalName` is
`localhost`: kube-apiserver (aggregator routing off, its default) resolves an ExternalName Service to
`https://<externalName>:<port>`, so it reaches this process on the loopback interface, where a ClusterIP would not
route and an Endpoints address may not be a loopback one.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime as dt
import ssl
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.waiting import wait_until

GROUP, VERSION = "metrics.k8s.io", "v1beta1"
APISERVICE = f"{VERSION}.{GROUP}"
SERVICE, SERVICE_NAMESPACE = "nodemedic-e2e-metrics", "kube-system"


@dataclass
class Usage:
    """What the server reports: node -> (cpu millicores, memory bytes); (namespace, pod) -> per container."""

    nodes: dict[str, tuple[int, int]] = field(default_factory=dict)
    pods: dict[tuple[str, str], dict[str, tuple[int, int]]] = field(default_factory=dict)
    age: dt.timedelta = dt.timedelta(0)  # how old the samples claim to be (to serve stale ones)
    requests: int = 0  # requests answered (kube-apiserver's availability checks included)


def _quantities(cpu_milli: int, memory: int) -> dict[str, str]:
    return {"cpu": f"{cpu_milli * 1_000_000}n", "memory": f"{memory // 1024}Ki"}


def _app(usage: Usage) -> web.Application:
    def stamp() -> dict[str, str]:
        taken = dt.datetime.now(dt.UTC) - usage.age
        return {"timestamp": taken.strftime("%Y-%m-%dT%H:%M:%SZ"), "window": "10s"}

    def node_item(name: str) -> dict:
        cpu, memory = usage.nodes[name]
        return {"metadata": {"name": name}, **stamp(), "usage": _quantities(cpu, memory)}

    def pod_item(namespace: str, name: str) -> dict:
        containers = [{"name": c, "usage": _quantities(cpu, memory)}
                      for c, (cpu, memory) in sorted(usage.pods[(namespace, name)].items())]
        return {"metadata": {"name": name, "namespace": namespace}, **stamp(), "containers": containers}

    def listing(kind: str, items: list[dict]) -> web.Response:
        return web.json_response({"kind": kind, "apiVersion": f"{GROUP}/{VERSION}", "metadata": {}, "items": items})

    def not_found(what: str) -> web.Response:
        return web.json_response({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound",
                                  "code": 404, "message": f"{what} not found"}, status=404)

    @web.middleware
    async def count(request: web.Request, handler: web.RequestHandler) -> web.StreamResponse:
        usage.requests += 1
        return await handler(request)

    async def resources(_: web.Request) -> web.Response:
        verbs = ["get", "list"]
        return web.json_response({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{GROUP}/{VERSION}",
                                  "resources": [{"name": "nodes", "singularName": "", "namespaced": False,
                                                 "kind": "NodeMetrics", "verbs": verbs},
                                                {"name": "pods", "singularName": "", "namespaced": True,
                                                 "kind": "PodMetrics", "verbs": verbs}]})

    async def nodes(_: web.Request) -> web.Response:
        return listing("NodeMetricsList", [node_item(n) for n in sorted(usage.nodes)])

    async def node(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        return web.json_response({"kind": "NodeMetrics", "apiVersion": f"{GROUP}/{VERSION}", **node_item(name)}) \
            if name in usage.nodes else not_found(f"nodemetrics {name}")

    async def pods(request: web.Request) -> web.Response:
        namespace = request.match_info.get("namespace")
        return listing("PodMetricsList", [pod_item(ns, n) for ns, n in sorted(usage.pods)
                                          if namespace is None or ns == namespace])

    async def pod(request: web.Request) -> web.Response:
        key = (request.match_info["namespace"], request.match_info["name"])
        return web.json_response({"kind": "PodMetrics", "apiVersion": f"{GROUP}/{VERSION}", **pod_item(*key)}) \
            if key in usage.pods else not_found(f"podmetrics {key[0]}/{key[1]}")

    app = web.Application(middlewares=[count])
    base = f"/apis/{GROUP}/{VERSION}"
    app.router.add_get(base, resources)
    app.router.add_get(f"{base}/nodes", nodes)
    app.router.add_get(f"{base}/nodes/{{name}}", node)
    app.router.add_get(f"{base}/pods", pods)
    app.router.add_get(f"{base}/namespaces/{{namespace}}/pods", pods)
    app.router.add_get(f"{base}/namespaces/{{namespace}}/pods/{{name}}", pod)
    return app


def _openssl(*args: str, cwd: Path) -> None:
    proc = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)} failed: {proc.stderr.strip()}")


def serving_certificate(directory: Path, host: str) -> tuple[Path, Path, Path]:
    """(CA certificate, server certificate, server key) for `host`, from a CA made for it."""
    directory.mkdir(parents=True, exist_ok=True)
    _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "ca.key", cwd=directory)
    _openssl("req", "-x509", "-new", "-key", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", "/CN=e2e-metrics-ca",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign",
             cwd=directory)
    _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "server.key", cwd=directory)
    _openssl("req", "-new", "-key", "server.key", "-out", "server.csr", "-subj", f"/CN={host}", cwd=directory)
    (directory / "server.ext").write_text(f"subjectAltName=DNS:{host}\nextendedKeyUsage=serverAuth\n")
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", "server.crt", "-days", "2", "-extfile", "server.ext", cwd=directory)
    return directory / "ca.crt", directory / "server.crt", directory / "server.key"


@contextlib.contextmanager
def serving(usage: Usage, *, directory: Path, client_ca: Path) -> Iterator[tuple[int, Path]]:
    """Run the server on localhost in a thread of its own: yields (port, the CA certificate that signed its
    certificate)."""
    ca, cert, key = serving_certificate(directory, f"{SERVICE}.{SERVICE_NAMESPACE}.svc")
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(client_ca))
    tls.load_cert_chain(str(cert), str(key))
    tls.verify_mode = ssl.CERT_REQUIRED  # only kube-apiserver's front proxy (and the admin) may ask
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(_app(usage), access_log=None)
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls)
    loop.run_until_complete(site.start())
    port = int(runner.addresses[0][1])
    thread = threading.Thread(target=loop.run_forever, name="metrics-api", daemon=True)
    thread.start()
    try:
        yield port, ca
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()


@contextlib.contextmanager
def registered(api: client.ApiClient, *, port: int, ca: Path) -> Iterator[None]:
    """The APIService `v1beta1.metrics.k8s.io` and its ExternalName Service, until the block ends; Available when
    the block starts."""
    core, registration = client.CoreV1Api(api), client.ApiregistrationV1Api(api)
    core.create_namespaced_service(SERVICE_NAMESPACE, {
        "metadata": {"name": SERVICE},
        "spec": {"type": "ExternalName", "externalName": "localhost", "ports": [{"port": port, "name": "https"}]},
    })
    registration.create_api_service({
        "metadata": {"name": APISERVICE},
        "spec": {"group": GROUP, "version": VERSION, "groupPriorityMinimum": 100, "versionPriority": 100,
                 "service": {"namespace": SERVICE_NAMESPACE, "name": SERVICE, "port": port},
                 "caBundle": base64.b64encode(ca.read_bytes()).decode()},
    })
    try:
        def available() -> object:
            status = registration.read_api_service(APISERVICE).status
            conditions = {c.type: c for c in (status.conditions or [])} if status is not None else {}
            ready = conditions.get("Available")
            assert ready is not None and ready.status == "True", (ready.reason, ready.message) if ready else None
            return True

        wait_until(available, timeout=60, what=f"APIService {APISERVICE} Available")
        yield
    finally:
        with contextlib.suppress(ApiException):
            registration.delete_api_service(APISERVICE)
        with contextlib.suppress(ApiException):
            core.delete_namespaced_service(SERVICE, SERVICE_NAMESPACE)
