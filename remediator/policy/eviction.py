"""The `eviction` section: how the evictor retries a PDB-refused eviction, the grace period it asks for, and whether a
balance move's replacement lands on the node the plan chose (remediator/control/landings.py)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from remediator.policy.fields import MIN_BACKOFF, check_backoff
from remediator.policy.reader import Reader, Section
from remediator.policy.syntax import INT64

_EVICTION_KEYS = ("retryDeadline", "initialBackoff", "maxBackoff", "gracePeriodSeconds", "landing", "landingDeadline")
LANDINGS = ("planned", "anywhere")
# A replacement pinned to a node that cannot take it is pending until this passes, then evicted to start unpinned:
# shorter than a kwok or cloud node's scheduling round trip would fail good landings; longer than an hour keeps a
# replica down that long.
_LANDING_FLOOR = (dt.timedelta(seconds=10), "a replacement needs a few seconds to be created and bound")
_LANDING_CEILING = (dt.timedelta(hours=1), "a replica pinned to a node that cannot take it would be down that long")


@dataclass(frozen=True)
class EvictionSettings:
    retry_deadline: dt.timedelta = dt.timedelta(minutes=10)  # per pod: give up on 429s after this
    initial_backoff: dt.timedelta = dt.timedelta(seconds=1)
    max_backoff: dt.timedelta = dt.timedelta(seconds=30)
    grace_period_seconds: int | None = None
    # planned: a balance move's replacement is pinned at admission to the node the plan counted on (the chart's
    # MutatingAdmissionPolicy, remediator.landingPolicy); anywhere: kube-scheduler places it, as descheduler's
    # evictions are placed (the default, so a policy written for descheduler behaves as it did).
    landing: str = "anywhere"
    landing_deadline: dt.timedelta = dt.timedelta(minutes=2)


def read_eviction(r: Reader, top: Section) -> EvictionSettings:
    m = r.section(top, "eviction", _EVICTION_KEYS)
    d = EvictionSettings()
    settings = EvictionSettings(
        retry_deadline=r.duration(m, "retryDeadline", d.retry_deadline),
        initial_backoff=r.duration(m, "initialBackoff", d.initial_backoff, floor=MIN_BACKOFF),
        max_backoff=r.duration(m, "maxBackoff", d.max_backoff),
        # DeleteOptions.gracePeriodSeconds is an int64: more is refused by the API server at every eviction.
        grace_period_seconds=r.optional_integer(m, "gracePeriodSeconds", d.grace_period_seconds, maximum=INT64[1]),
        landing=r.text(m, "landing", d.landing,
                       check=lambda v: None if v in LANDINGS else f"must be one of {', '.join(LANDINGS)}"),
        landing_deadline=r.duration(m, "landingDeadline", d.landing_deadline, floor=_LANDING_FLOOR,
                                    ceiling=_LANDING_CEILING),
    )
    check_backoff(r, m, settings.initial_backoff, settings.max_backoff)
    return settings
