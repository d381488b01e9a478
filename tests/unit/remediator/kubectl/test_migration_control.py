"""`kubectl nodemedic migrations | approve | reject` (kubectl/migration_control.py) against a fake API server."""

from __future__ import annotations

import asyncio
import copy
import datetime as dt
import json
from typing import Any

import pytest

from nodemedic_common.kube_errors import ApiError
from remediator.kubectl.migration_control import Refused, decide, name_of, show
from remediator.model.migration import (
    Decision,
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
PATH = "/apis/nodemedic.io/v1alpha1/namespaces/nodemedic/migrations"
M = Migration(name="migration-0011aabb", namespace="nodemedic", engine="BalanceResourceMix", proposed=NOW,
              expires=NOW + dt.timedelta(hours=1), gain=Gain("resource-mix deviation (points)", 160.5, 120.0),
              steps=(Step("shop/a", "uid-a", "ReplicaSet/web", "rs-web", "n1", "n2", "n2"),
                     Step("shop/b", "uid-b", "ReplicaSet/api", "rs-api", "n1", "n3", "n3")))


def stored(phase: Phase | None = Phase.PROPOSED, decision: str = "",
           steps: tuple[StepStatus, ...] = ()) -> dict[str, Any]:
    doc = proposal(M)
    doc["metadata"]["resourceVersion"] = "41"  # type: ignore[index]
    doc["spec"]["decision"] = decision  # type: ignore[index]
    if phase is not None:
        doc.update(status_body(phase, steps, "waiting", NOW))
    return doc


class Api:
    def __init__(self, doc: dict[str, Any] | None, *, patch_status: int = 0) -> None:
        self.doc, self.patch_status = doc, patch_status
        self.calls: list[tuple[str, str, Any]] = []

    async def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> Any:
        self.calls.append((method, path, body))
        if path.endswith("/selfsubjectreviews"):
            return {"status": {"userInfo": {"username": "alice"}}}
        if method == "PATCH" and self.patch_status:
            raise ApiError(self.patch_status, method, path, "{}")
        if path == PATH:
            return {"items": [] if self.doc is None else [copy.deepcopy(self.doc)]}
        if self.doc is None:
            raise ApiError(404, method, path, '{"reason": "NotFound"}')
        return copy.deepcopy(self.doc)


def run_decide(api: Api, decision: Decision = Decision.APPROVED, now: dt.datetime = NOW) -> str:
    return asyncio.run(decide(api, "nodemedic", "migration-0011aabb", decision, now=now))  # type: ignore[arg-type]


def test_an_approval_is_a_guarded_patch_of_the_decision_with_who_and_when() -> None:
    api = Api(stored())
    said = run_decide(api)
    assert said.startswith("migration-0011aabb approved by alice: the remediator re-checks its 2 step(s)")
    (patch,) = [c for c in api.calls if c[0] == "PATCH"]
    assert patch[1] == f"{PATH}/migration-0011aabb"
    assert patch[2] == {"metadata": {"resourceVersion": "41"},
                        "spec": {"decision": "Approved", "decidedBy": "alice", "decidedAt": "2026-03-01T12:00:00Z"}}
    assert run_decide(Api(stored()), Decision.REJECTED) == "migration-0011aabb rejected by alice: nothing moves"


@pytest.mark.parametrize(("api", "now", "why"), [
    (Api(None), NOW, "no migration migration-0011aabb in namespace nodemedic"),
    (Api(stored(decision="Approved")), NOW, "is already approved"),
    (Api(stored(phase=Phase.RUNNING)), NOW, "is Running: nothing to decide"),
    (Api(stored(phase=None)), NOW, "was not proposed by nodemedic"),
    (Api(stored()), NOW + dt.timedelta(hours=1), "expired at 2026-03-01T13:00:00Z: nothing moves"),
    (Api(stored(), patch_status=409), NOW, "changed since it was read"),
    (Api({"metadata": {"name": "migration-0011aabb", "namespace": "nodemedic"}, "spec": {"engine": "X"}}), NOW,
     "spec.engine: 'X' is not one of"),
], ids=["unknown", "decided", "running", "not-ours", "expired", "raced", "unreadable"])
def test_a_decision_that_makes_no_sense_is_refused_and_nothing_is_written(api: Api, now: dt.datetime,
                                                                         why: str) -> None:
    with pytest.raises(Refused, match=why):
        run_decide(api, now=now)
    assert not [c for c in api.calls if c[0] == "PATCH" and api.patch_status == 0]


def test_the_list_and_one_plan_in_detail_with_each_step() -> None:
    steps = (StepStatus(0, StepState.DONE, "shop/a2", NOW, "shop/a2 runs on n2"), StepStatus(1, StepState.MOVING))
    api = Api(stored(phase=Phase.RUNNING, decision="Approved", steps=steps))
    listing = asyncio.run(show(api, "nodemedic", None, output="text"))  # type: ignore[arg-type]
    assert listing.splitlines()[0].split() == ["NAME", "ENGINE", "STEPS", "GAIN", "DECISION", "PHASE", "PROPOSED",
                                               "EXPIRES"]
    assert "migration-0011aabb  BalanceResourceMix  2" in listing and "160.5 -> 120" in listing
    detail = asyncio.run(show(api, "nodemedic", "migration-0011aabb", output="text"))  # type: ignore[arg-type]
    assert "1     shop/a  ReplicaSet/web  n1    n2  Done" in detail and "shop/a2 runs on n2" in detail
    assert json.loads(asyncio.run(show(api, "nodemedic", None, output="json")))[0]["spec"]["engine"] == \
        "BalanceResourceMix"  # type: ignore[arg-type]
    assert "no migrations" in asyncio.run(show(Api(None), "nodemedic", None, output="text"))  # type: ignore[arg-type]


def test_a_name_is_given_whole_or_by_its_hex_and_never_as_a_path() -> None:
    assert name_of("0011aabb") == name_of("migration-0011aabb") == "migration-0011aabb"
    with pytest.raises(Refused):
        name_of("../../secrets")
