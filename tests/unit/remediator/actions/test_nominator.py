"""The nomination: one status patch guarded by the pod's UID; an API refusal is reported, never raised."""

from __future__ import annotations

import asyncio

from nodemedic_common.kube_errors import ApiError
from remediator.actions.nominator import nominate
from remediator.model.records import PodRecord

POD = PodRecord(namespace="ns", name="wanted", uid="uid-w")


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


def test_the_pending_pod_is_nominated_with_its_uid_as_precondition() -> None:
    kube = FakeKube()
    assert asyncio.run(nominate(kube, POD, "node-3")) is None  # type: ignore[arg-type]
    assert kube.calls == [("PATCH", "/api/v1/namespaces/ns/pods/wanted/status",
                           {"metadata": {"uid": "uid-w"}, "status": {"nominatedNodeName": "node-3"}},
                           "application/strategic-merge-patch+json")]


def test_a_refusal_is_the_answer_not_an_exception() -> None:
    gone = ApiError(404, "PATCH", "/api/v1/namespaces/ns/pods/wanted/status",
                    '{"kind": "Status", "code": 404, "reason": "NotFound", "message": "pods \\"wanted\\" not found"}')
    why = asyncio.run(nominate(FakeKube(gone), POD, "node-3"))  # type: ignore[arg-type]
    assert why == "PATCH /api/v1/namespaces/ns/pods/wanted/status: HTTP 404: pods \"wanted\" not found"
