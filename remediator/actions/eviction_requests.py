"""The one place that evicts: the policy/v1 Eviction subresource, with PDB 429s retried until a deadline.

Each planned eviction runs as its own task so one PDB-blocked pod never stalls the cycle; the pod's UID
is sent as a precondition, so a replacement pod that reuses the name is never evicted by mistake.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum

from nodemedic_common.kube_client import Kube
from nodemedic_common.kube_errors import UNKNOWN_FATE, ApiError
from remediator.model.plan import PlannedEviction
from remediator.policy.eviction import EvictionSettings

# The Status cause the API server attaches when a PodDisruptionBudget refuses an eviction (policy/v1
# DisruptionBudgetCause).
DISRUPTION_BUDGET_CAUSE = "DisruptionBudget"
RETRYABLE = frozenset({0, 429, 500, 503, 504})  # 0: no answer at all (connection error, timeout)


class Outcome(StrEnum):
    EVICTED = "evicted"
    GONE = "gone"  # the pod (or this incarnation of it) no longer exists: nothing to do
    REFUSED = "refused"  # still blocked by a PDB at the deadline
    FAILED = "failed"  # any other API error
    ABORTED = "aborted"  # leadership lost before the eviction was sent


@dataclass(frozen=True)
class EvictionResult:
    eviction: PlannedEviction
    outcome: Outcome
    attempts: int
    detail: str
    seconds: float


async def _nothing() -> None:
    return None


def eviction_body(e: PlannedEviction, settings: EvictionSettings) -> dict[str, object]:
    delete_options: dict[str, object] = {"preconditions": {"uid": e.pod.uid}}
    if settings.grace_period_seconds is not None:
        delete_options["gracePeriodSeconds"] = settings.grace_period_seconds
    return {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": e.pod.name, "namespace": e.pod.namespace,
                     "annotations": {"nodemedic.io/strategy": e.strategy, "nodemedic.io/reason": e.reason[:200]}},
        "deleteOptions": delete_options,
    }


async def evict(
    kube: Kube,
    e: PlannedEviction,
    settings: EvictionSettings,
    *,
    may_act: Callable[[], bool],
    log: logging.Logger,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    before_attempt: Callable[[], Awaitable[None]] | None = None,
    after_refusal: Callable[[], Awaitable[None]] | None = None,
) -> EvictionResult:
    """Evict one pod; retry 429 (PDB) with exponential back-off and full jitter until settings.retry_deadline.
    `before_attempt` runs before each attempt and `after_refusal` after each one the API server refused (a landing opens
    and closes its landing object so: remediator/control/landings.py); they handle their own errors."""
    start = time.monotonic()
    deadline = start + settings.retry_deadline.total_seconds()
    backoff = settings.initial_backoff.total_seconds()
    path = f"/api/v1/namespaces/{e.pod.namespace}/pods/{e.pod.name}/eviction"
    attempts = 0
    unanswered = ""  # the last attempt whose answer left the pod's fate unknown
    while True:
        if not may_act():
            return EvictionResult(e, Outcome.ABORTED, attempts, "not the leader any more", time.monotonic() - start)
        attempts += 1
        try:
            await (before_attempt or _nothing)()
            await kube.request("POST", path, body=eviction_body(e, settings))
            return EvictionResult(e, Outcome.EVICTED, attempts, "", time.monotonic() - start)
        except ApiError as err:
            # A Conflict means our UID precondition failed: the API server retries its own resourceVersion
            # conflicts, so the pod we planned for is gone (a replacement may carry its name).
            if err.status == 404 or (err.status == 409 and err.reason == "Conflict"):
                if unanswered:  # most likely our own eviction, whose answer was lost: it is announced as one
                    return EvictionResult(e, Outcome.EVICTED, attempts, f"the pod is gone after an attempt whose "
                                          f"answer was lost ({unanswered})", time.monotonic() - start)
                return EvictionResult(e, Outcome.GONE, attempts, err.message, time.monotonic() - start)
            if err.status in UNKNOWN_FATE:
                unanswered = f"attempt {attempts}: {err.message}"
            else:
                await (after_refusal or _nothing)()
            if err.status not in RETRYABLE:
                return EvictionResult(e, Outcome.FAILED, attempts, err.message, time.monotonic() - start)
            if time.monotonic() + backoff > deadline:
                outcome = Outcome.REFUSED if DISRUPTION_BUDGET_CAUSE in err.causes else Outcome.FAILED
                return EvictionResult(e, outcome, attempts, err.message, time.monotonic() - start)
            log.info("eviction retry", extra={"pod": e.pod.key, "attempt": attempts, "error": err.message})
        await sleep(random.uniform(0, backoff) + backoff / 2)
        backoff = min(backoff * 2, settings.max_backoff.total_seconds())
