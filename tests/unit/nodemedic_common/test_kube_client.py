"""The client both programs use, against a real HTTP server: a watch event of any size the API server accepts is read
(aiohttp's line iterator stopped at 512 KiB and raised LineTooLong, which killed both programs: issue 25), one over the
explicit bound is its own error, counted by path; 410 Gone is WatchExpired however it comes; an answer that is not JSON
is an ApiError; the token is asked for at each request (it rotates); every call is counted by verb and code."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web
from prometheus_client import CollectorRegistry

from nodemedic_common import kube_client
from nodemedic_common.kube_client import PARTIAL_METADATA, PARTIAL_METADATA_LIST, Kube
from nodemedic_common.kube_credentials import Credentials
from nodemedic_common.kube_errors import ApiError, WatchExpired, WatchLineTooLong
from tests.watch_server import WatchServer, big_object, serving

MiB = 1 << 20
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def client(base: str, registry: CollectorRegistry | None = None, **kwargs: Any) -> Kube:
    return Kube(Credentials(server=base, ssl=False), registry=registry or CollectorRegistry(), **kwargs)


async def answering(path: str, handler: Handler, body: Callable[[str], Awaitable[None]]) -> None:
    """Run `body(base_url)` against a server that answers GET `path` with `handler`."""
    application = web.Application()
    application.router.add_get(path, handler)
    runner = web.AppRunner(application)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        await asyncio.wait_for(body(f"http://127.0.0.1:{runner.addresses[0][1]}"), 20)
    finally:
        await runner.cleanup()


def test_a_watch_event_of_one_mebibyte_is_read_whole_and_bookmarks_are_passed_on() -> None:
    small = big_object("n0", "2", 10)
    big = big_object("n1", "3", MiB)
    server = WatchServer("/api/v1/nodes", lists=[], watches=[[
        {"type": "ADDED", "object": small}, {"type": "MODIFIED", "object": big},
        {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "4"}}}, {"type": "DELETED", "object": big}]])
    got: list[dict[str, Any]] = []

    async def body(base: str) -> None:
        async with client(base) as kube:
            got.extend([e async for e in kube.watch("/api/v1/nodes", "1", params={"fieldSelector": "x=y"})])

    asyncio.run(serving(server, body))
    assert [e["type"] for e in got] == ["ADDED", "MODIFIED", "BOOKMARK", "DELETED"]
    assert len(got[1]["object"]["metadata"]["annotations"]["example.com/blob"]) == MiB
    assert server.requests == [("WATCH", {"fieldSelector": "x=y", "watch": "1", "resourceVersion": "1",
                                          "allowWatchBookmarks": "true", "timeoutSeconds": "300"})]


def test_a_watch_event_over_the_bound_is_its_own_error_counted_by_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kube_client, "MAX_WATCH_LINE", 256 << 10)  # a small bound, so a 1 MiB event is over it
    server = WatchServer("/api/v1/nodes", lists=[], watches=[[{"type": "ADDED", "object": big_object("n", "2", MiB)}]])
    registry = CollectorRegistry()

    async def body(base: str) -> None:
        async with client(base, registry, metrics_prefix="nodemedic_agent") as kube:
            with pytest.raises(WatchLineTooLong, match="longer than 0 MiB"):
                _ = [e async for e in kube.watch("/api/v1/nodes", "1", params={"fieldSelector": "x=y"})]

    asyncio.run(serving(server, body))
    assert registry.get_sample_value("nodemedic_agent_watch_lines_too_long_total", {"path": "/api/v1/nodes"}) == 1
    assert registry.get_sample_value("nodemedic_agent_api_requests_total", {"verb": "WATCH", "code": "200"}) == 1


@pytest.mark.parametrize("how", ["HTTP status", "ERROR event"])
def test_410_gone_is_watch_expired_however_it_comes(how: str) -> None:
    gone = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old resource version: 1 (5)"}

    async def answer(request: web.Request) -> web.StreamResponse:
        if how == "HTTP status":
            return web.json_response(gone, status=410)
        resp = web.StreamResponse()
        await resp.prepare(request)
        await resp.write(json.dumps({"type": "ERROR", "object": gone}).encode() + b"\n")
        return resp

    async def body(base: str) -> None:
        async with client(base) as kube:
            with pytest.raises(WatchExpired, match="too old resource version") as raised:
                _ = [e async for e in kube.watch("/api/v1/pods", "1")]
            assert (raised.value.status, raised.value.reason) == (410, "Expired")

    asyncio.run(answering("/api/v1/pods", answer, body))


def test_an_error_event_other_than_410_is_an_api_error_with_its_code() -> None:
    async def answer(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        await resp.prepare(request)
        await resp.write(b'{"type": "ERROR", "object": {"code": 500, "message": "etcd away"}}\n')
        return resp

    async def body(base: str) -> None:
        async with client(base) as kube:
            with pytest.raises(ApiError, match="etcd away") as raised:
                _ = [e async for e in kube.watch("/api/v1/pods", "1")]
            assert raised.value.status == 500 and not isinstance(raised.value, WatchExpired)

    asyncio.run(answering("/api/v1/pods", answer, body))


@pytest.mark.parametrize("line", [b"<html>", b'["not", "an", "event"]', b'{"type": "ADDED", "object": null}',
                                  b'{"type": "ADDED", "object": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"],
                         ids=["not JSON", "a list", "no object", "nested past the decoder"])
def test_a_watch_line_that_is_not_an_event_is_an_api_error(line: bytes) -> None:
    async def answer(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        await resp.prepare(request)
        await resp.write(line + b"\n")
        return resp

    async def body(base: str) -> None:
        async with client(base) as kube:
            with pytest.raises(ApiError, match=r"^WATCH /api/v1/pods: HTTP 0: not"):
                _ = [e async for e in kube.watch("/api/v1/pods", "1")]

    asyncio.run(answering("/api/v1/pods", answer, body))


@pytest.mark.parametrize("body", [b"<html>gateway</html>", b'{"items": [', b"\xff\xfe\x00binary",
                                  b'{"items": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"],
                         ids=["HTML", "truncated JSON", "binary", "nested past the decoder"])
def test_a_2xx_answer_that_is_not_json_is_an_api_error_not_a_decode_error(body: bytes) -> None:
    async def answer(request: web.Request) -> web.Response:
        return web.Response(body=body, content_type="application/json")

    async def run(base: str) -> None:
        async with client(base) as kube:
            with pytest.raises(ApiError, match=r"GET /api/v1/nodes: HTTP 200: the answer is not JSON"):
                await kube.get("/api/v1/nodes")

    asyncio.run(answering("/api/v1/nodes", answer, run))


def test_a_request_sends_the_accept_header_it_is_given_and_json_otherwise() -> None:
    """The autoscaler detection asks for an object's metadata only (PARTIAL_METADATA)."""
    path = "/api/v1/namespaces/kube-system/configmaps/x"

    async def echo(request: web.Request) -> web.Response:
        return web.json_response({"accept": request.headers["Accept"]})

    async def body(base: str) -> None:
        async with client(base) as kube:
            assert await kube.request("GET", path, accept=PARTIAL_METADATA) == {
                "accept": "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json"}
            assert await kube.get(path) == {"accept": "application/json"}

    asyncio.run(answering(path, echo, body))


def test_a_list_and_a_watch_send_the_accept_header_they_are_given_and_json_otherwise() -> None:
    """The agent's watch of its own Node asks for the Node's metadata only (PARTIAL_METADATA_LIST, PARTIAL_METADATA)."""
    seen: list[tuple[str, str]] = []

    async def answer(request: web.Request) -> web.StreamResponse:
        watching = request.query.get("watch") == "1"
        seen.append(("WATCH" if watching else "LIST", request.headers["Accept"]))
        if watching:
            return web.Response(body=b'{"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"2"}}}\n')
        return web.json_response({"metadata": {"resourceVersion": "1"}, "items": [{"metadata": {"name": "a"}}]})

    async def body(base: str) -> None:
        async with client(base) as kube:
            for accept in ({}, {"accept": PARTIAL_METADATA_LIST}):
                assert [p["items"] async for p in kube.list_pages("/api/v1/nodes", page_size=5, **accept)] == [
                    [{"metadata": {"name": "a"}}]]
            for accept in ({}, {"accept": PARTIAL_METADATA}):
                assert [e["type"] async for e in kube.watch("/api/v1/nodes", "1", **accept)] == ["ADDED"]

    asyncio.run(answering("/api/v1/nodes", answer, body))
    assert seen == [
        ("LIST", "application/json"),
        ("LIST", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json"),
        ("WATCH", "application/json"),
        ("WATCH", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json")]


def test_the_token_is_asked_for_at_each_request_and_sent_as_a_bearer_token() -> None:
    tokens = iter(["one", "Bearer two", None])

    async def echo(request: web.Request) -> web.Response:
        return web.json_response({"authorization": request.headers.get("Authorization"),
                                  "agent": request.headers["User-Agent"]})

    async def body(base: str) -> None:
        creds = Credentials(server=base, ssl=False, token=lambda: next(tokens))
        async with Kube(creds, registry=CollectorRegistry(), user_agent="nodemedic-agent") as kube:
            seen = [await kube.get("/api/v1/nodes/a") for _ in range(3)]
        assert [s["authorization"] for s in seen] == ["Bearer one", "Bearer two", None]
        assert {s["agent"] for s in seen} == {"nodemedic-agent"}

    asyncio.run(answering("/api/v1/nodes/a", echo, body))


def test_each_call_is_counted_by_verb_and_code_a_collection_get_as_a_list() -> None:
    async def answer(request: web.Request) -> web.Response:
        return web.json_response({"items": []} if request.path.endswith("nodes") else {}, status=200)

    async def missing(request: web.Request) -> web.Response:
        return web.json_response({"kind": "Status", "code": 404, "reason": "NotFound"}, status=404)

    registry = CollectorRegistry()

    async def body(base: str) -> None:
        async with client(base, registry) as kube:
            await kube.get("/api/v1/nodes", fieldSelector="metadata.name=a")
            await kube.get("/api/v1/nodes/a")
            with pytest.raises(ApiError) as raised:
                await kube.get("/api/v1/nodes/gone")
            assert (raised.value.status, raised.value.reason) == (404, "NotFound")
        async with client("http://127.0.0.1:1", registry=None) as unreachable:
            with pytest.raises(ApiError, match="HTTP 0"):
                await unreachable.get("/api/v1/nodes/a")

    async def main() -> None:
        application = web.Application()
        application.router.add_get("/api/v1/nodes", answer)
        application.router.add_get("/api/v1/nodes/a", answer)
        application.router.add_get("/api/v1/nodes/gone", missing)
        runner = web.AppRunner(application)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        try:
            await body(f"http://127.0.0.1:{runner.addresses[0][1]}")
        finally:
            await runner.cleanup()

    asyncio.run(main())
    counted = {(s.labels["verb"], s.labels["code"]): s.value for m in registry.collect() for s in m.samples
               if s.name == "nodemedic_api_requests_total"}
    assert counted == {("LIST", "200"): 1, ("GET", "200"): 1, ("GET", "404"): 1}


def _paged(pages: dict[str, bytes], asked: list[str], slow: float = 0.0) -> Handler:
    """`slow`: seconds each page after the first takes."""
    async def handle(request: web.Request) -> web.StreamResponse:
        assert request.query["limit"] == "2"
        asked.append(request.query.get("continue", ""))
        if asked[-1]:
            await asyncio.sleep(slow)
        return web.Response(body=pages[request.query.get("continue", "")], content_type="application/json")
    return handle


def _page(cont: str, names: list[str], *, before: str = "") -> bytes:
    """A list answer as the API server writes it: its metadata before its items (`before`: fields ahead of both)."""
    items = ",".join(json.dumps({"metadata": {"name": n}}) for n in names)
    return (f'{{"kind":"PodList",{before}"metadata":{{"resourceVersion":"9"'
            + (f',"continue":"{cont}"' if cont else "") + f'}},"items":[{items}]}}').encode()


def test_list_pages_gives_each_page_in_order_and_asks_for_the_next_before_the_caller_takes_this_one() -> None:
    pages = {"": _page("c1", ["a", "b"]), "c1": _page("c2", ["c", "d"]), "c2": _page("", ["e"])}
    asked: list[str] = []
    seen: list[tuple[list[str], list[str]]] = []

    async def body(base: str) -> None:
        async with client(base) as kube:
            async for page in kube.list_pages("/api/v1/pods", page_size=2):
                await asyncio.sleep(0.05)  # the caller's work on the page: the next one is asked for meanwhile
                seen.append(([i["metadata"]["name"] for i in page["items"]], list(asked)))

    asyncio.run(answering("/api/v1/pods", _paged(pages, asked), body))
    assert seen == [(["a", "b"], ["", "c1"]), (["c", "d"], ["", "c1", "c2"]), (["e"], ["", "c1", "c2"])]


def test_a_token_read_ahead_that_the_decoded_page_contradicts_is_dropped_for_the_pages_own() -> None:
    decoy = '"status":{"metadata":{"continue":"decoy"}},'  # an earlier "metadata" than the list's own
    pages = {"": _page("c1", ["a", "b"], before=decoy), "c1": _page("", ["c"]), "decoy": _page("", ["x"])}
    asked: list[str] = []

    async def body(base: str) -> None:
        async with client(base) as kube:
            names = [i["metadata"]["name"] async for page in kube.list_pages("/api/v1/pods", page_size=2)
                     for i in page["items"]]
            assert names == ["a", "b", "c"]

    asyncio.run(answering("/api/v1/pods", _paged(pages, asked), body))
    assert asked[0] == "" and asked[-1] == "c1"


def test_a_caller_that_stops_early_leaves_no_request_running() -> None:
    pages = {"": _page("c1", ["a", "b"]), "c1": _page("", ["c"])}

    async def body(base: str) -> None:
        async with client(base) as kube:
            async for _ in kube.list_pages("/api/v1/pods", page_size=2):
                break
            await asyncio.sleep(0.05)
            running = [t for t in asyncio.all_tasks() if t.get_coro().__qualname__ == "Kube._exchange"]
            assert running == []

    asyncio.run(answering("/api/v1/pods", _paged(pages, [], slow=1), body))


@pytest.mark.parametrize(("raw", "token"), [
    (_page("abc==", []), "abc=="), (_page("", []), ""),
    (b'{"items":[{"name":"%s"}],"metadata":{"continue":"late"}}' % (b"x" * 2000), ""),
    (b'{"kind":"List","metadata":{"continue":', ""), (b"not json", "")])
def test_continue_token_reads_a_lists_metadata_from_its_first_bytes_or_gives_nothing(raw: bytes,
                                                                                     token: str) -> None:
    assert kube_client.continue_token(raw) == token


MANAGED = {"manager": "kubectl", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {".": {}}}}


def _with_managed_fields(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "managedFields": [MANAGED]}, "spec": {"nodeName": "n"}}


def test_list_pages_and_watch_events_come_without_managed_fields() -> None:
    listed = {"kind": "PodList", "metadata": {"resourceVersion": "9"},
              "items": [_with_managed_fields("a"), _with_managed_fields("b")]}
    server = WatchServer("/api/v1/pods", lists=[], watches=[[{"type": "ADDED", "object": _with_managed_fields("c")}]])
    got: list[Any] = []

    async def listing(base: str) -> None:
        async with client(base) as kube:
            got.extend([page async for page in kube.list_pages("/api/v1/pods", page_size=2)])

    async def watching(base: str) -> None:
        async with client(base) as kube:
            got.extend([e async for e in kube.watch("/api/v1/pods", "1")])

    pages = {"": json.dumps(listed, separators=(",", ":")).encode()}
    asyncio.run(answering("/api/v1/pods", _paged(pages, []), listing))
    asyncio.run(serving(server, watching))
    assert [i["metadata"] for i in got[0]["items"]] == [{"name": "a"}, {"name": "b"}]
    assert got[1]["object"] == {"metadata": {"name": "c"}, "spec": {"nodeName": "n"}}


def test_a_page_that_is_not_json_is_told_as_the_server_sent_it() -> None:
    # The cut of what is not JSON is no JSON either: the error quotes the answer, managedFields and all.
    truncated = b'{"metadata":{},"items":[{"metadata":{"name":"a","managedFields":[{"f":{}}]},"spec":{"node'

    async def body(base: str) -> None:
        async with client(base) as kube:
            with pytest.raises(ApiError, match=r"GET /api/v1/pods: HTTP 200: the answer is not JSON .*managedFields"):
                _ = [page async for page in kube.list_pages("/api/v1/pods", page_size=2)]

    asyncio.run(answering("/api/v1/pods", _paged({"": truncated}, []), body))
