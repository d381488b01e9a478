"""What a failed call carries: the API's Status read for callers to decide on (code, reason, causes), any other body
kept short for people; the watch errors are API errors, so a caller that only knows ApiError still catches them."""

from __future__ import annotations

import json

import pytest

from nodemedic_common.kube_errors import ApiError, WatchExpired, WatchLineTooLong


def test_a_status_body_gives_its_message_reason_and_the_causes_reasons() -> None:
    status = {"kind": "Status", "code": 429, "reason": "TooManyRequests",
              "message": "Cannot evict pod as it would violate the pod's disruption budget.",
              "details": {"causes": [{"reason": "DisruptionBudget", "message": "needs 2 healthy"}, "odd", {}]}}
    e = ApiError(429, "POST", "/api/v1/namespaces/a/pods/p/eviction", json.dumps(status))
    assert (e.status, e.reason, e.causes) == (429, "TooManyRequests", ("DisruptionBudget", ""))
    assert str(e) == ("POST /api/v1/namespaces/a/pods/p/eviction: HTTP 429: Cannot evict pod as it would violate "
                      "the pod's disruption budget.")


@pytest.mark.parametrize("body", ["<html>" + "x" * 1000, "[1, 2]", "null", ""], ids=["HTML", "a list", "null", "empty"])
def test_any_other_body_is_kept_short_as_the_message_with_no_reason(body: str) -> None:
    e = ApiError(502, "GET", "/api/v1/nodes", body)
    assert e.message == body[:300] and e.reason == "" and e.causes == ()
    assert e.body == body


@pytest.mark.parametrize("kind", [WatchExpired, WatchLineTooLong])
def test_the_watch_errors_are_api_errors(kind: type[ApiError]) -> None:
    with pytest.raises(ApiError, match=r"^WATCH /api/v1/pods: HTTP 410: too old"):
        raise kind(410, "WATCH", "/api/v1/pods", "too old")


def test_a_body_nested_past_the_decoder_is_kept_as_the_message_not_a_recursion_error() -> None:
    body = "[" * 100_000 + "]" * 100_000
    e = ApiError(500, "GET", "/api/v1/nodes", body)
    assert e.message == body[:300] and e.reason == ""
