"""`patch_node`: one merge patch of a Node; True once it landed, False (logged at info) on 409 because the node changed
since the plan, False (logged at error) on any other refusal; nothing raised."""

from __future__ import annotations

import asyncio
import logging

import pytest

from nodemedic_common.kube_errors import ApiError
from remediator.actions.node_patch import patch_node

BODY = {"metadata": {"resourceVersion": "41", "annotations": {"a": "b"}}}


class FakeKube:
    def __init__(self, answer: ApiError | None = None) -> None:
        self.answer = answer
        self.calls: list[tuple[str, str, object, str]] = []

    async def request(self, method: str, path: str, *, body: object = None,
                      content_type: str = "application/json", **_: object) -> object:
        self.calls.append((method, path, body, content_type))
        if self.answer is not None:
            raise self.answer
        return {}


LOG = logging.getLogger("test.node_patch")


def test_a_patch_that_lands_is_one_merge_patch_of_the_node_and_true() -> None:
    kube = FakeKube()
    assert asyncio.run(patch_node(kube, LOG, "n1", BODY, what="repair")) is True  # type: ignore[arg-type]
    assert kube.calls == [("PATCH", "/api/v1/nodes/n1", BODY, "application/merge-patch+json")]


def test_a_conflict_is_false_and_logged_as_deferred_not_as_an_error(caplog: pytest.LogCaptureFixture) -> None:
    kube = FakeKube(ApiError(409, "PATCH", "/api/v1/nodes/n1", '{"kind":"Status","reason":"Conflict"}'))
    with caplog.at_level(logging.INFO, logger=LOG.name):
        assert asyncio.run(patch_node(kube, LOG, "n1", BODY, what="fence")) is False  # type: ignore[arg-type]
    assert [(r.levelno, r.getMessage(), getattr(r, "node", None)) for r in caplog.records] == [
        (logging.INFO, "fence write deferred: the node changed since the plan", "n1")]


@pytest.mark.parametrize("status", [0, 403, 404, 422, 500])
def test_any_other_failure_is_false_and_logged_as_an_error_with_the_reason(
        status: int, caplog: pytest.LogCaptureFixture) -> None:
    kube = FakeKube(ApiError(status, "PATCH", "/api/v1/nodes/n1", "went wrong"))
    with caplog.at_level(logging.INFO, logger=LOG.name):
        assert asyncio.run(patch_node(kube, LOG, "n1", BODY, what="repair")) is False  # type: ignore[arg-type]
    (record,) = caplog.records
    assert (record.levelno, record.getMessage()) == (logging.ERROR, "repair write failed")
    assert "went wrong" in record.error  # type: ignore[attr-defined]
