"""The remediator's watch reader against a real HTTP server: an event of any size the API server accepts is read
(aiohttp's line iterator stopped at 512 KiB and raised LineTooLong, which killed the remediator: issue 25); one over
the explicit bound is counted and the watch relists instead of crashing or re-reading it forever."""

from __future__ import annotations

import asyncio
import logging
import re
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from prometheus_client import CollectorRegistry

from nodemedic_common import kube_transport
from nodemedic_common.kube_transport import ApiError
from remediator.state import kube as kube_mod
from remediator.state.caches import ClusterCache
from remediator.state.kube import Credentials, CredentialsError, Kube, WatchLineTooLong
from tests.watch_server import WatchServer, big_object, serving

MiB = 1 << 20
LOG = logging.getLogger("test.kube")


def client(base: str, registry: CollectorRegistry | None = None) -> Kube:
    return Kube(Credentials(server=base, ssl=False, token=None), registry=registry or CollectorRegistry())


def test_a_watch_event_of_one_mebibyte_is_read_whole() -> None:
    small = big_object("n0", "2", 10)
    big = big_object("n1", "3", MiB)
    server = WatchServer("/api/v1/nodes", lists=[{"metadata": {"resourceVersion": "1"}, "items": []}],
                         watches=[[{"type": "ADDED", "object": small}, {"type": "MODIFIED", "object": big},
                                   {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "4"}}}]])
    got: list[dict[str, Any]] = []

    async def body(base: str) -> None:
        async with client(base) as kube:
            got.extend([e async for e in kube.watch("/api/v1/nodes", "1")])

    asyncio.run(serving(server, body))
    assert [e["type"] for e in got] == ["ADDED", "MODIFIED", "BOOKMARK"]
    assert len(got[1]["object"]["metadata"]["annotations"]["example.com/blob"]) == MiB


def test_an_event_over_the_bound_is_counted_and_the_informer_relists_past_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kube_transport, "MAX_WATCH_LINE", 256 << 10)  # a small bound, so a 1 MiB event is over it
    big = {**big_object("n1", "3", MiB), "status": {"allocatable": {"cpu": "4"}}}
    server = WatchServer("/api/v1/nodes",
                         lists=[{"metadata": {"resourceVersion": "1"}, "items": [big_object("n0", "1", 10)]},
                                {"metadata": {"resourceVersion": "3"}, "items": [big_object("n0", "1", 10), big]}],
                         watches=[[{"type": "ADDED", "object": big}]])
    registry = CollectorRegistry()

    async def body(base: str) -> None:
        async with client(base, registry) as kube:
            cache = ClusterCache(kube, log=LOG)
            informer = next(i for i in cache.informers if i.path == "/api/v1/nodes")
            task = asyncio.create_task(informer.run())
            await server.wait_for(["LIST", "WATCH", "LIST", "WATCH"])
            assert not task.done(), "the informer survives"
            task.cancel()
            assert sorted(cache.nodes) == ["n0", "n1"]
            assert server.requests[3][1]["resourceVersion"] == "3", "the watch resumes after the relist"

    asyncio.run(serving(server, body))
    assert registry.get_sample_value("nodemedic_watch_lines_too_long_total", {"path": "/api/v1/nodes"}) == 1
    assert [kind for kind, _ in server.requests] == ["LIST", "WATCH", "LIST", "WATCH"]


def test_the_watch_raises_its_own_error_for_an_event_over_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kube_transport, "MAX_WATCH_LINE", 256 << 10)
    server = WatchServer("/api/v1/nodes", lists=[], watches=[[{"type": "ADDED", "object": big_object("n", "2", MiB)}]])

    async def body(base: str) -> None:
        async with client(base) as kube:
            with pytest.raises(WatchLineTooLong, match="longer than 0 MiB"):
                _ = [e async for e in kube.watch("/api/v1/nodes", "1")]

    asyncio.run(serving(server, body))


NOT_A_CERT = "bm90IGEgY2VydA=="  # base64 of "not a cert"


def hostile_kubeconfigs() -> dict[str, bytes]:
    """Kubeconfigs that are wrong in type, encoding or certificate data, by what is wrong."""
    def doc(cluster: str, user: str = "{token: abc}") -> bytes:
        return (f"apiVersion: v1\nkind: Config\nclusters:\n- name: k\n  cluster: {cluster}\ncontexts:\n- name: c\n"
                f"  context: {{cluster: k, user: u}}\ncurrent-context: c\nusers:\n- name: u\n  user: {user}\n"
                ).encode()
    return {
        "CA data not a certificate": doc("{server: 'https://127.0.0.1:1', "
                                         f"certificate-authority-data: {NOT_A_CERT}}}"),
        "server a list": doc("{server: [1, 2]}"),
        "clusters a number": b"apiVersion: v1\nclusters: 5\ncurrent-context: c\ncontexts: 5\n",
        "not UTF-8": b"apiVersion: v1\nclusters:\n- \xff\xfe\n",
    }


@pytest.mark.parametrize("content", list(hostile_kubeconfigs().values()), ids=list(hostile_kubeconfigs()))
def test_a_hostile_kubeconfig_is_a_credentials_error_naming_the_file(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "kubeconfig"
    path.write_bytes(content)
    with pytest.raises(CredentialsError, match=f"^{re.escape(str(path))}: "):
        kube_mod.load_credentials(str(path))


@pytest.mark.parametrize("body", [b"<html>gateway</html>", b'{"items": [', b"\xff\xfe\x00binary"],
                         ids=["HTML", "truncated JSON", "binary"])
def test_a_2xx_answer_that_is_not_json_is_an_api_error_not_a_decode_error(body: bytes) -> None:
    async def answer(request: web.Request) -> web.Response:
        return web.Response(body=body, content_type="application/json")

    async def main() -> None:
        application = web.Application()
        application.router.add_get("/api/v1/nodes", answer)
        runner = web.AppRunner(application)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        kube = client(f"http://127.0.0.1:{runner.addresses[0][1]}")
        try:
            with pytest.raises(ApiError, match=r"GET /api/v1/nodes: HTTP 200: the answer is not JSON"):
                await kube.get("/api/v1/nodes")
        finally:
            await kube.close()
            await runner.cleanup()

    asyncio.run(main())


def test_a_request_sends_the_accept_header_it_is_given_and_json_otherwise() -> None:
    """The autoscaler detection asks for an object's metadata only (PARTIAL_METADATA)."""
    async def echo(request: web.Request) -> web.Response:
        return web.json_response({"accept": request.headers["Accept"]})

    async def main() -> None:
        application = web.Application()
        application.router.add_get("/api/v1/namespaces/kube-system/configmaps/x", echo)
        runner = web.AppRunner(application)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        kube = client(f"http://127.0.0.1:{runner.addresses[0][1]}")
        path = "/api/v1/namespaces/kube-system/configmaps/x"
        try:
            assert await kube.request("GET", path, accept=kube_mod.PARTIAL_METADATA) == {
                "accept": "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json"}
            assert await kube.get(path) == {"accept": "application/json"}
        finally:
            await kube.close()
            await runner.cleanup()

    asyncio.run(main())
