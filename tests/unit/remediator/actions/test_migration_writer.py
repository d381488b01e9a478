"""The Migration objects' writes (actions/migration_writer.py): a proposal and its status, status patches, deletes and
the listing that reads what it can and names what it cannot."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import pytest

from nodemedic_common.kube_errors import ApiError
from remediator.actions.migration_writer import delete, listed, propose, write_status
from remediator.model.migration import (
    MAX_ANSWER,
    Gain,
    Migration,
    Phase,
    Step,
    StepState,
    StepStatus,
    proposal,
    status_body,
)

NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
M = Migration(name="migration-0011aabb", namespace="ops", engine="BalanceResourceMix", proposed=NOW,
              expires=NOW + dt.timedelta(hours=1), gain=Gain("resource-mix deviation (points)", 10.0, 5.0),
              steps=(Step("shop/a", "uid-a", "ReplicaSet/web", "rs-web", "n1", "n2", "n2"),))
PATH = "/apis/nodemedic.io/v1alpha1/namespaces/ops/migrations"


class Api:
    def __init__(self, status: int = 0, answer: Any = None) -> None:
        self.status, self.answer = status, answer
        self.calls: list[tuple[str, str, Any, Any]] = []

    async def request(self, method: str, path: str, *, body: Any = None, params: Any = None, **kw: Any) -> Any:
        self.calls.append((method, path, body or params, kw))
        if self.status:
            raise ApiError(self.status, method, path, "{}")
        return self.answer


def test_a_proposal_is_created_then_its_status_written_through_the_subresource() -> None:
    api = Api()
    asyncio.run(propose(api, M, NOW))  # type: ignore[arg-type]
    (create, status) = api.calls
    assert create[:3] == ("POST", PATH, proposal(M))
    assert status[:2] == ("PATCH", f"{PATH}/migration-0011aabb/status")
    assert status[2]["status"]["phase"] == "Proposed" and status[3]["content_type"] == "application/merge-patch+json"
    assert status[2]["status"]["steps"] == [{"index": 0, "state": "Pending", "replacement": "", "at": None,
                                             "message": ""}]


def test_a_status_is_written_whole_and_a_migration_gone_is_deleted() -> None:
    api = Api()
    body = status_body(Phase.RUNNING, (StepStatus(0, StepState.MOVING, at=NOW),), "step 1 of 1 started", NOW)
    asyncio.run(write_status(api, M, body))  # type: ignore[arg-type]
    assert api.calls[0][2] == body
    asyncio.run(delete(Api(404), M))  # type: ignore[arg-type]
    with pytest.raises(ApiError):
        asyncio.run(delete(Api(500), M))  # type: ignore[arg-type]


def test_the_listing_reads_each_migration_names_each_it_cannot_read_and_bounds_the_answer() -> None:
    good = proposal(M)
    bad = proposal(M)
    bad["metadata"] = {"name": "migration-ffff0000", "namespace": "ops"}
    bad["spec"]["engine"] = "Other"  # type: ignore[index]
    api = Api(answer={"items": [good, bad, "junk"]})
    found, problems = asyncio.run(listed(api, "ops"))  # type: ignore[arg-type]
    assert [m.name for m in found] == ["migration-0011aabb"] and found[0].phase is None
    assert problems[0].startswith("Migration ops/migration-ffff0000: spec.engine:") and len(problems) == 2
    assert api.calls[0][3] == {"limit": MAX_ANSWER} and api.calls[0][2] == {"limit": "200"}
    assert asyncio.run(listed(Api(answer=[1, 2]), "ops")) == ([], [])  # type: ignore[arg-type]
