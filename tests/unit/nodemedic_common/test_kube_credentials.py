"""`Credentials` is a frozen record whose one behaviour is its default token source (`no_token`: no token), so this
tests how the client reads it (`Kube`, the smallest public user): without a token source, or with one that answers
nothing, a request carries no Authorization header; a token is sent as a bearer token, with its prefix kept once."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable

import pytest
from aiohttp import web
from prometheus_client import CollectorRegistry

from nodemedic_common.kube_client import Kube
from nodemedic_common.kube_credentials import Credentials, no_token


def _authorization_sent(make: Callable[[str], Credentials]) -> str | None:
    async def scenario() -> str | None:
        async def answer(request: web.Request) -> web.Response:
            return web.json_response({"authorization": request.headers.get("Authorization")})

        application = web.Application()
        application.router.add_get("/api/v1/nodes", answer)
        runner = web.AppRunner(application)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        try:
            kube = Kube(make(f"http://127.0.0.1:{runner.addresses[0][1]}"), registry=CollectorRegistry())
            try:
                answer_ = await asyncio.wait_for(kube.get("/api/v1/nodes"), 10)
            finally:
                await kube.close()
        finally:
            await runner.cleanup()
        return answer_["authorization"]

    return asyncio.run(scenario())


def test_the_default_token_source_gives_no_token() -> None:
    assert no_token() is None
    assert Credentials(server="https://h:6443", ssl=False).token() is None


def test_credentials_without_a_token_source_send_no_authorization_header() -> None:
    assert _authorization_sent(lambda base: Credentials(server=base, ssl=False)) is None


def test_an_empty_token_sends_no_authorization_header() -> None:
    assert _authorization_sent(lambda base: Credentials(server=base, ssl=False, token=lambda: "")) is None


@pytest.mark.parametrize(("token", "header"), [("abc", "Bearer abc"), ("Bearer abc", "Bearer abc"),
                                               ("bearer abc", "bearer abc")])
def test_a_token_is_sent_as_a_bearer_token_with_its_prefix_added_only_when_missing(token: str, header: str) -> None:
    assert _authorization_sent(lambda base: Credentials(server=base, ssl=False, token=lambda: token)) == header


def test_credentials_cannot_be_changed_once_made() -> None:
    creds = Credentials(server="https://h:6443", ssl=False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        creds.server = "https://other:6443"  # type: ignore[misc]
