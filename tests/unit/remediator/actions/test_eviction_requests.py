"""The eviction call: 429s retried with back-off until the deadline, other outcomes classified."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging

import pytest

from nodemedic_common.kube_errors import ApiError
from remediator.actions.eviction_requests import Outcome, evict, eviction_body
from remediator.model.plan import PlannedEviction
from remediator.model.records import PodRecord
from remediator.policy.eviction import EvictionSettings

POD = PodRecord(namespace="ns", name="web-1", uid="uid-1", node_name="n1")
PLANNED = PlannedEviction(pod=POD, strategy="RemovePodsViolatingNodeTaints", reason="untolerated taint")
# Status bodies as kube-apiserver sends them (pkg/registry/core/pod/storage/eviction.go).
PDB = json.dumps({"kind": "Status", "status": "Failure", "reason": "TooManyRequests", "code": 429,
                  "message": "Cannot evict pod as it would violate the pod's disruption budget.",
                  "details": {"causes": [{"reason": "DisruptionBudget",
                                          "message": "The disruption budget web needs 2 healthy pods and has 2 "
                                                     "currently"}]}})
THROTTLED = json.dumps({"kind": "Status", "status": "Failure", "reason": "TooManyRequests", "code": 429,
                        "message": "Too many requests, please try again later.", "details": {"retryAfterSeconds": 1}})
REPLACED = json.dumps({"kind": "Status", "status": "Failure", "reason": "Conflict", "code": 409,
                       "message": "Operation cannot be fulfilled on Pod \"web-1\": the UID in the precondition (a) "
                                  "does not match the UID in record (b). The object might have been deleted and then "
                                  "recreated", "details": {"name": "web-1", "kind": "Pod"}})


class FakeKube:
    def __init__(self, answers: list[ApiError | None]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, str, object]] = []

    async def request(self, method: str, path: str, *, body: object = None, **_: object) -> object:
        self.calls.append((method, path, body))
        answer = self.answers.pop(0) if self.answers else None
        if answer is not None:
            raise answer
        return {}


def run(kube: FakeKube, settings: EvictionSettings, may_act: bool = True) -> tuple:
    sleeps: list[float] = []

    async def sleep(s: float) -> None:
        sleeps.append(s)

    result = asyncio.run(evict(kube, PLANNED, settings, may_act=lambda: may_act, log=logging.getLogger("t"),
                               sleep=sleep))  # type: ignore[arg-type]
    return result, sleeps


def test_the_eviction_body_names_the_pod_and_pins_its_uid() -> None:
    body = eviction_body(PLANNED, EvictionSettings(grace_period_seconds=5))
    assert body["apiVersion"] == "policy/v1" and body["kind"] == "Eviction"
    assert body["deleteOptions"] == {"preconditions": {"uid": "uid-1"}, "gracePeriodSeconds": 5}


def test_a_pdb_refusal_is_retried_with_growing_backoff_until_it_succeeds() -> None:
    kube = FakeKube([ApiError(429, "POST", "p", PDB)] * 3)
    result, sleeps = run(kube, EvictionSettings(initial_backoff=dt.timedelta(seconds=1),
                                                max_backoff=dt.timedelta(seconds=2)))
    assert result.outcome == Outcome.EVICTED and result.attempts == 4
    assert kube.calls[0][1] == "/api/v1/namespaces/ns/pods/web-1/eviction"
    assert len(sleeps) == 3 and all(0.5 <= s <= 3.0 for s in sleeps)


def test_a_pdb_refusal_past_the_deadline_is_reported_as_refused() -> None:
    kube = FakeKube([ApiError(429, "POST", "p", PDB)] * 100)
    result, _ = run(kube, EvictionSettings(retry_deadline=dt.timedelta(seconds=0)))
    assert result.outcome == Outcome.REFUSED and "disruption budget" in result.detail


@pytest.mark.parametrize(("body", "outcome"), [
    (json.dumps({"reason": "TooManyRequests", "message": "no PDB words here",
                 "details": {"causes": [{"reason": "DisruptionBudget"}]}}), Outcome.REFUSED),
    (THROTTLED, Outcome.FAILED),
    (json.dumps({"message": "mentions a disruption budget but carries no cause"}), Outcome.FAILED),
], ids=["cause-decides-not-text", "throttled-is-not-a-pdb", "text-alone-is-not-a-pdb"])
def test_a_refusal_is_a_pdbs_only_when_the_status_carries_the_disruption_budget_cause(body: str,
                                                                                      outcome: Outcome) -> None:
    kube = FakeKube([ApiError(429, "POST", "p", body)] * 100)
    result, _ = run(kube, EvictionSettings(retry_deadline=dt.timedelta(seconds=0)))
    assert result.outcome == outcome


@pytest.mark.parametrize(
    ("error", "outcome"),
    [(ApiError(404, "POST", "p", "{}"), Outcome.GONE),
     (ApiError(409, "POST", "p", REPLACED), Outcome.GONE),
     (ApiError(403, "POST", "p", '{"message": "forbidden"}'), Outcome.FAILED)],
    ids=["pod-gone", "pod-replaced", "forbidden"],
)
def test_other_answers_are_classified_without_retrying(error: ApiError, outcome: Outcome) -> None:
    kube = FakeKube([error])
    result, sleeps = run(kube, EvictionSettings())
    assert result.outcome == outcome and result.attempts == 1 and sleeps == []


def test_nothing_is_sent_once_leadership_is_lost() -> None:
    kube = FakeKube([])
    result, _ = run(kube, EvictionSettings(), may_act=False)
    assert result.outcome == Outcome.ABORTED and kube.calls == []


NOT_FOUND = ApiError(404, "POST", "p", '{"message": "pods \\"web-1\\" not found", "reason": "NotFound", "code": 404}')
TIMEOUT = ApiError(504, "POST", "p", '{"message": "the server was unable to return a response in the time allotted",'
                                     ' "reason": "Timeout", "code": 504}')
NO_ANSWER = ApiError(0, "POST", "p", "ServerDisconnectedError: Server disconnected")


@pytest.mark.parametrize("lost", [NO_ANSWER, TIMEOUT], ids=["no-answer", "504"])
@pytest.mark.parametrize("then", [NOT_FOUND, ApiError(409, "POST", "p", REPLACED)], ids=["not-found", "uid-conflict"])
def test_a_pod_gone_after_an_attempt_whose_answer_was_lost_is_reported_evicted_with_why(lost: ApiError,
                                                                                       then: ApiError) -> None:
    """The API server may carry out an eviction and its answer be lost; the retry then finds the pod gone. That is
    our eviction and must be announced (an Event, a metric) like any other, saying how it was learnt."""
    result, _ = run(FakeKube([lost, then]), EvictionSettings())
    assert result.outcome == Outcome.EVICTED and result.attempts == 2
    assert result.detail.startswith("the pod is gone after an attempt whose answer was lost (attempt 1: ")
    assert lost.message in result.detail


def test_a_pod_gone_after_pdb_refusals_only_is_gone_not_evicted() -> None:
    """A 429 says the eviction was not carried out: a pod gone after it was removed by someone else."""
    result, _ = run(FakeKube([ApiError(429, "POST", "p", PDB), NOT_FOUND]), EvictionSettings())
    assert result.outcome == Outcome.GONE and result.attempts == 2
