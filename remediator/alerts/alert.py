"""One remediation worth telling someone about, as every sink receives it (formats.py shapes it per sink)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from enum import StrEnum

SEVERITIES = ("info", "warning", "critical")


class AlertKind(StrEnum):
    TAINTED = "Tainted"
    UNTAINTED = "Untainted"
    EVICTED = "Evicted"
    EVICTION_REFUSED = "EvictionRefused"
    EVICTION_FAILED = "EvictionFailed"
    LANDED = "Landed"  # a balance move's replacement bound to the planned node (control/landings.py)
    LANDING_MISSED = "LandingMissed"  # ... unpinned, stuck, or elsewhere
    MIGRATION_PROPOSED = "MigrationProposed"  # an engine's moves written for a person (control/migrations.py)
    MIGRATION_STEP = "MigrationStep"  # an approved migration started
    MIGRATION_FAILED = "MigrationFailed"  # a step failed: reverting, or failed for good
    MIGRATION_ENDED = "MigrationEnded"  # succeeded, reverted, refused, rejected or expired
    BREAKER_OPEN = "CircuitBreakerOpen"
    HELD = "Held"
    CRASH_LOOP_NODE = "CrashLoopNode"
    ZONE_EXPOSURE = "ZoneExposure"
    SCHEDULER_LOOP = "SchedulerLoop"
    REPAIR_STEP = "RepairStep"
    REPAIRED = "Repaired"
    REPAIR_ENDED = "RepairEnded"
    NEEDS_A_PERSON = "NeedsAPerson"
    FENCED = "Fenced"
    UNFENCED = "Unfenced"
    DARK_NODE = "DarkNode"


@dataclass(frozen=True)
class Alert:
    kind: str  # an AlertKind, or the kind a strategy's report names for its notices (model.NodeNotice)
    severity: str  # "info" | "warning" | "critical"
    summary: str  # one line for humans
    node: str = ""
    namespace: str = ""
    pod: str = ""
    reason: str = ""  # machine-ish reason, e.g. the rule name or "PDB"
    details: dict[str, str] = field(default_factory=dict)
    # Required and keyword-only: there is no honest default for when something happened. Timezone-aware.
    time: dt.datetime = field(kw_only=True)

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"Alert.severity {self.severity!r}: must be one of {', '.join(SEVERITIES)}")
        if self.time.utcoffset() is None:  # a naive time would silently be read as the host's local time
            raise ValueError(f"Alert.time {self.time.isoformat()}: must be timezone-aware")
