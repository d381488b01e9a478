"""`hops`: a failed read worded by the hop that failed: the API server (silent or speaking), or, through its pod
proxy, the leader timing out, no answer at all, the leader itself answering an error, the proxy unable to reach it,
the pod gone, or any other proxy error."""

from __future__ import annotations

import json

import pytest

from nodemedic_common.kube_errors import ApiError
from remediator.kubectl.hops import HopFailed, api_server, proxied


def _status(code: int, message: str) -> str:
    return json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "code": code})


def test_an_api_server_that_did_not_answer_is_said_so() -> None:
    failed = api_server(ApiError(0, "GET", "/api/v1/nodes", "ClientConnectorError: refused"))
    assert isinstance(failed, HopFailed)
    assert str(failed).startswith("the API server did not answer: ")
    assert "ClientConnectorError: refused" in str(failed)


def test_an_api_server_that_answered_an_error_is_quoted() -> None:
    failed = api_server(ApiError(403, "GET", "/api/v1/nodes", _status(403, "nodes is forbidden")))
    assert str(failed).startswith("the API server said: ")
    assert "nodes is forbidden" in str(failed)


def _proxied(e: ApiError) -> str:
    return str(proxied(e, "nm-remediator-abc", "8080", "/plan", 2.5))


def test_a_timeout_through_the_proxy_blames_the_leader_not_the_api_server() -> None:
    said = _proxied(ApiError(0, "GET", "/x", "TimeoutError: "))
    assert said == ("the leader nm-remediator-abc did not answer /plan within 2.5s through the API server's pod proxy "
                    "(the API server itself answered the Lease read): the leader is stuck or overloaded")


def test_a_timeout_named_with_its_module_is_still_a_timeout() -> None:
    assert "is stuck or overloaded" in _proxied(ApiError(0, "GET", "/x", "asyncio.TimeoutError: late"))


def test_no_answer_through_the_proxy_that_is_not_a_timeout_gives_the_error() -> None:
    said = _proxied(ApiError(0, "GET", "/x", "ServerDisconnectedError: gone"))
    assert said == ("no answer to /plan through the API server's pod proxy to the leader nm-remediator-abc: "
                    "ServerDisconnectedError: gone")


def test_an_error_the_leader_itself_answered_is_the_leaders_cut_to_200_characters() -> None:
    said = _proxied(ApiError(500, "GET", "/x", "boom " * 100))
    assert said.startswith("the leader nm-remediator-abc answered /plan with HTTP 500: boom boom")
    assert len(said) == len("the leader nm-remediator-abc answered /plan with HTTP 500: ") + 200


@pytest.mark.parametrize("body", [json.dumps({"error": "not leading"}), "[" * 100_000 + "]" * 100_000],
                         ids=["an object", "nested past the decoder"])
def test_a_json_answer_that_is_not_a_status_object_is_the_leaders(body: str) -> None:
    said = _proxied(ApiError(503, "GET", "/x", body))
    assert said.startswith("the leader nm-remediator-abc answered /plan with HTTP 503")


@pytest.mark.parametrize("code", [502, 503])
def test_a_proxy_status_502_or_503_says_the_proxy_could_not_reach_the_leader(code: int) -> None:
    said = _proxied(ApiError(code, "GET", "/x", _status(code, "dial tcp 10.0.0.5:8080: connect: refused")))
    assert said == ("the API server's pod proxy could not reach the leader nm-remediator-abc:8080: "
                    "dial tcp 10.0.0.5:8080: connect: refused")


def test_a_proxy_404_says_the_leases_holder_pod_may_have_gone() -> None:
    said = _proxied(ApiError(404, "GET", "/x", _status(404, 'pods "nm-remediator-abc" not found')))
    assert said.startswith("the API server has no pod nm-remediator-abc (the Lease's holder): it may have just gone")


def test_any_other_proxy_status_is_quoted_with_its_code() -> None:
    said = _proxied(ApiError(403, "GET", "/x", _status(403, "pods/proxy is forbidden")))
    assert said == "the API server's pod proxy said: HTTP 403: pods/proxy is forbidden"
