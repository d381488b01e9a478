"""The `migrations` section: how long a proposed migration waits for a person, what a failed step does to the steps
already completed, and how long finished migrations stay listed (remediator/control/migrations.py). Whether an engine's
moves need a person at all is the engine's own `approval` argument."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from remediator.policy.reader import Reader, Section

_KEYS = ("expireAfter", "onFailure", "keepFinished")
ON_FAILURE = ("revert", "keep")
APPROVALS = ("required", "automatic")
# A plan waits this long at least (a person needs minutes to read it) and at most a week (the cluster it was made for
# is gone by then: re-checked at approval anyway, but a list of stale plans helps nobody).
_EXPIRE_FLOOR = (dt.timedelta(minutes=5), "a person needs minutes to read a plan")
_EXPIRE_CEILING = (dt.timedelta(days=7), "a plan that old was made for another cluster")
_KEEP_FLOOR = (dt.timedelta(hours=1), "a finished migration is the record of what moved: keep it to be read")
_KEEP_CEILING = (dt.timedelta(days=90), "more than a quarter of finished migrations only fills the API server")


@dataclass(frozen=True)
class MigrationSettings:
    expire_after: dt.timedelta = dt.timedelta(hours=1)  # no decision by then: Expired, nothing moved
    on_failure: str = "revert"  # revert: undo the completed steps, last first; keep: leave them
    keep_finished: dt.timedelta = dt.timedelta(days=7)  # then the object is deleted


def read_migrations(r: Reader, top: Section) -> MigrationSettings:
    m = r.section(top, "migrations", _KEYS)
    d = MigrationSettings()
    return MigrationSettings(
        expire_after=r.duration(m, "expireAfter", d.expire_after, floor=_EXPIRE_FLOOR, ceiling=_EXPIRE_CEILING),
        on_failure=r.text(m, "onFailure", d.on_failure,
                          check=lambda v: None if v in ON_FAILURE else f"must be one of {', '.join(ON_FAILURE)}"),
        keep_finished=r.duration(m, "keepFinished", d.keep_finished, floor=_KEEP_FLOOR, ceiling=_KEEP_CEILING),
    )


def read_approval(r: Reader, m: Section, default: str) -> str:
    """An engine's `approval` argument: required (a person approves each migration) or automatic (its moves are made
    as each cycle plans them)."""
    return r.text(m, "approval", default,
                  check=lambda v: None if v in APPROVALS else f"must be one of {', '.join(APPROVALS)}")
