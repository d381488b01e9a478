"""The condition state machine: check observations in, the conditions the agent owns on its Node out.

Rules (the "beyond NPD" promises live here):
- the agent owns exactly the condition types its configured checks declare, and never a kubelet-owned one;
- a restart keeps what is already on the Node: `seed()` takes the Node's current conditions, and a type keeps
  that status until a check reports fresh evidence for it (log monitors stay silent until they have some);
- `lastTransitionTime` moves only when the status changes, so the remediator's `for` timers are honest;
- a check that failed or timed out turns its condition types Unknown (we no longer know), never False;
- types the agent wrote before but that are no longer configured are handed to the reporter for deletion.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from agent.model import ConditionReport, Observation, Status

KUBELET_OWNED = frozenset({"Ready", "MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable"})
# What the agent writes of one condition's message: a plugin's output (up to 1 MiB) or a log line would otherwise
# go whole into every status PATCH and sit in the Node object every watcher of Nodes receives. The kubelet's own
# messages are one sentence; NPD's plugin output defaults to 80 characters.
MAX_MESSAGE = 1024
TRUNCATED = " ...[truncated]"


def bounded_message(message: str) -> str:
    """`message`, or its first characters and TRUNCATED, at most MAX_MESSAGE characters in all."""
    if len(message) <= MAX_MESSAGE:
        return message
    return message[:MAX_MESSAGE - len(TRUNCATED)] + TRUNCATED


@dataclass(frozen=True)
class NodeCondition:
    type: str
    status: Status
    reason: str
    message: str
    last_transition: dt.datetime

    def to_api(self, heartbeat: dt.datetime) -> dict[str, str]:
        return {"type": self.type, "status": str(self.status), "reason": self.reason, "message": self.message,
                "lastTransitionTime": _rfc3339(self.last_transition), "lastHeartbeatTime": _rfc3339(heartbeat)}


def _rfc3339(t: dt.datetime) -> str:
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# A time read back from the Node outside what any Kubernetes component writes (before the Unix epoch, after Go's
# int64 nanoseconds end) or without an offset is unknown: it is rewritten as UTC at every status write, and near
# datetime's ends that conversion overflows.
_EARLIEST = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_LATEST = dt.datetime(2262, 4, 11, tzinfo=dt.UTC)


def _parse_time(value: object) -> dt.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None and _EARLIEST <= parsed <= _LATEST else None


class ConditionBook:
    def __init__(self, owned: Mapping[str, Iterable[str]]) -> None:
        """`owned`: check name -> the condition types it may report."""
        self.by_check = {check: tuple(types) for check, types in owned.items()}
        self.owned = {t for types in self.by_check.values() for t in types}
        clash = self.owned & KUBELET_OWNED
        if clash:
            raise ValueError(f"condition types owned by the kubelet cannot be reported: {sorted(clash)}")
        self.current: dict[str, NodeCondition] = {}
        self.version = 0  # bumped on every change that must be written

    def seed(self, node_conditions: Iterable[Mapping[str, object]],
             defaults: Iterable[ConditionReport] = (), now: dt.datetime | None = None) -> None:
        """Adopt what the Node already says about our types (a restart must not reset them); `defaults`
        (e.g. a log monitor's declared initial conditions) fill in only the types the Node does not carry."""
        self._adopt(node_conditions)
        for d in defaults:
            if d.type in self.owned and d.type not in self.current:
                self._set(d.type, d.status, d.reason, d.message, now or dt.datetime.now(dt.UTC))

    def _adopt(self, node_conditions: Iterable[Mapping[str, object]]) -> None:
        for raw in node_conditions:
            type_ = str(raw.get("type", ""))
            if type_ not in self.owned or type_ in self.current:
                continue
            try:
                status = Status(str(raw.get("status", "Unknown")))
            except ValueError:
                status = Status.UNKNOWN
            self.current[type_] = NodeCondition(
                type=type_, status=status, reason=str(raw.get("reason", "") or ""),
                message=bounded_message(str(raw.get("message", "") or "")),
                last_transition=_parse_time(raw.get("lastTransitionTime")) or dt.datetime.now(dt.UTC),
            )

    def apply(self, obs: Observation) -> bool:
        """Fold one observation in; True when something the Node should show has changed."""
        changed = False
        if obs.error:
            for type_ in self.by_check.get(obs.check, ()):
                changed |= self._set(type_, Status.UNKNOWN, "CheckFailed", f"{obs.check}: {obs.error}", obs.at)
            return changed
        for report in obs.conditions:
            if report.type not in self.owned:
                continue  # a check reporting a type it did not declare: ignore rather than claim it
            changed |= self._set(report.type, report.status, report.reason, report.message, obs.at)
        return changed

    def _set(self, type_: str, status: Status, reason: str, message: str, at: dt.datetime) -> bool:
        message = bounded_message(message)
        old = self.current.get(type_)
        if old is not None and (old.status, old.reason, old.message) == (status, reason, message):
            return False
        transition = at if old is None or old.status != status else old.last_transition
        self.current[type_] = replace(old, status=status, reason=reason, message=message,
                                      last_transition=transition) if old else NodeCondition(
            type=type_, status=status, reason=reason, message=message, last_transition=transition)
        self.version += 1
        return True

    def conditions(self) -> list[NodeCondition]:
        return [self.current[t] for t in sorted(self.current)]

    def retired(self, previously_written: Iterable[str]) -> list[str]:
        """Types this agent wrote before (recorded in its state file) that no check owns any more."""
        return sorted(set(previously_written) - self.owned - KUBELET_OWNED)
