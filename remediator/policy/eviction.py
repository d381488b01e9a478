"""The `eviction` section: how the evictor retries a PDB-refused eviction, and the grace period it asks for."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from remediator.policy.fields import MIN_BACKOFF, check_backoff
from remediator.policy.reader import Reader, Section
from remediator.policy.syntax import INT64

_EVICTION_KEYS = ("retryDeadline", "initialBackoff", "maxBackoff", "gracePeriodSeconds")


@dataclass(frozen=True)
class EvictionSettings:
    retry_deadline: dt.timedelta = dt.timedelta(minutes=10)  # per pod: give up on 429s after this
    initial_backoff: dt.timedelta = dt.timedelta(seconds=1)
    max_backoff: dt.timedelta = dt.timedelta(seconds=30)
    grace_period_seconds: int | None = None


def read_eviction(r: Reader, top: Section) -> EvictionSettings:
    m = r.section(top, "eviction", _EVICTION_KEYS)
    d = EvictionSettings()
    settings = EvictionSettings(
        retry_deadline=r.duration(m, "retryDeadline", d.retry_deadline),
        initial_backoff=r.duration(m, "initialBackoff", d.initial_backoff, floor=MIN_BACKOFF),
        max_backoff=r.duration(m, "maxBackoff", d.max_backoff),
        # DeleteOptions.gracePeriodSeconds is an int64: more is refused by the API server at every eviction.
        grace_period_seconds=r.optional_integer(m, "gracePeriodSeconds", d.grace_period_seconds, maximum=INT64[1]),
    )
    check_backoff(r, m, settings.initial_backoff, settings.max_backoff)
    return settings
