"""`patch_node`: one merge patch of a Node; True once it landed (a lost answer read back from the node), False (logged
at info) on 409 because the node changed since the plan, False (logged at error) on any other refusal; nothing
raised."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from nodemedic_common.kube_errors import ApiError
from remediator.actions.node_patch import patch_node

BODY = {"metadata": {"resourceVersion": "41", "annotations": {"a": "b"}}}
FENCED = {"taints": [{"key": "k", "effect": "NoExecute"}]}


class FakeKube:
    def __init__(self, answer: ApiError | None = None, node: dict[str, Any] | None = None) -> None:
        self.answer, self.node = answer, node  # node: what a GET reads back (None: the GET fails)
        self.calls: list[tuple[str, str, object, str]] = []

    async def get(self, path: str, **_: object) -> dict[str, Any]:
        self.calls.append(("GET", path, None, ""))
        if self.node is None:
            raise ApiError(0, "GET", path, "no answer")
        return self.node

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


@pytest.mark.parametrize("status", [0, 500, 503, 504])
def test_a_write_whose_answer_was_lost_and_that_the_node_shows_landed(
        status: int, caplog: pytest.LogCaptureFixture) -> None:
    """The next plan would read the write as done and never announce it: the read-back makes it a write like any."""
    body = {"metadata": {"resourceVersion": "41", "annotations": {"a": "b", "gone": None}},
            "spec": {"taints": [{"key": "k", "effect": "NoExecute"}]}}
    node = {"metadata": {"resourceVersion": "42", "annotations": {"a": "b", "other": "x"}},
            "spec": {"taints": [{"key": "k", "effect": "NoExecute"}]}}
    kube = FakeKube(ApiError(status, "PATCH", "/api/v1/nodes/n1", "lost"), node)
    with caplog.at_level(logging.INFO, logger=LOG.name):
        assert asyncio.run(patch_node(kube, LOG, "n1", body, what="fence")) is True  # type: ignore[arg-type]
    assert [r.getMessage() for r in caplog.records] == ["fence write landed, its answer lost"]


@pytest.mark.parametrize("node", [
    {"metadata": {"annotations": {"a": "old"}}, "spec": FENCED},
    {"metadata": {"annotations": {"a": "b", "gone": "still"}}, "spec": FENCED},
    {"metadata": {"annotations": {"a": "b"}}, "spec": {}},
    None,  # the read-back fails too
])
def test_a_write_whose_answer_was_lost_and_that_the_node_does_not_show_failed(node: dict[str, Any] | None) -> None:
    body = {"metadata": {"resourceVersion": "41", "annotations": {"a": "b", "gone": None}},
            "spec": {"taints": [{"key": "k", "effect": "NoExecute"}]}}
    kube = FakeKube(ApiError(0, "PATCH", "/api/v1/nodes/n1", "lost"), node)
    assert asyncio.run(patch_node(kube, LOG, "n1", body, what="fence")) is False  # type: ignore[arg-type]


@pytest.mark.parametrize("status", [0, 403, 404, 422, 500])
def test_any_other_failure_is_false_and_logged_as_an_error_with_the_reason(
        status: int, caplog: pytest.LogCaptureFixture) -> None:
    kube = FakeKube(ApiError(status, "PATCH", "/api/v1/nodes/n1", "went wrong"))
    with caplog.at_level(logging.INFO, logger=LOG.name):
        assert asyncio.run(patch_node(kube, LOG, "n1", BODY, what="repair")) is False  # type: ignore[arg-type]
    (record,) = caplog.records
    assert (record.levelno, record.getMessage()) == (logging.ERROR, "repair write failed")
    assert "went wrong" in record.error  # type: ignore[attr-defined]
