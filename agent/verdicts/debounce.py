"""Failures in a row before a probe's condition turns True: shared by the healthz probes and the cluster DNS check.

True only after `threshold` failed probes in a row, so one slow answer during a garbage collection or a restart
does not mark the node; until then the last settled status is repeated (Unknown if none has settled yet, since one
failure says nothing yet), with the failure in the message. One good probe makes it False at once. Reasons are
`<Subject>IsHealthy`, `<condition type>` and `<Subject>HealthUnknown`.
"""

from __future__ import annotations

from agent.model import ConditionReport, Status


class FailureDebounce:
    def __init__(self, subject: str, condition_type: str, threshold: int) -> None:
        self.condition_type = condition_type
        self._healthy = f"{subject}IsHealthy"
        self._unknown = f"{subject}HealthUnknown"
        self._threshold = threshold
        self._failures = 0  # failed probes in a row
        self._settled: Status = Status.UNKNOWN  # the last status decided

    @property
    def confirming(self) -> bool:
        """A failure streak has begun and not reached the threshold yet: the probes that decide it are due."""
        return 0 < self._failures < self._threshold

    def report(self, failure: str | None, *, ok: str, target: str) -> ConditionReport:
        """`failure` None: the probe of `target` passed (`ok` says how); else what went wrong, in stable words."""
        if failure is None:
            self._failures, self._settled = 0, Status.FALSE
            return ConditionReport(self.condition_type, Status.FALSE, self._healthy, ok)
        self._failures += 1
        threshold = self._threshold
        if self._failures >= threshold:
            # No running count here: a message that changed with every probe made every probe a status write.
            self._settled = Status.TRUE
            return ConditionReport(self.condition_type, Status.TRUE, self.condition_type,
                                   f"{target}: {failure} ({threshold} or more failures in a row)")
        message = f"{target}: {failure} ({self._failures} failure(s) in a row, threshold {threshold})"
        reason = {Status.TRUE: self.condition_type, Status.FALSE: self._healthy}.get(self._settled, self._unknown)
        return ConditionReport(self.condition_type, self._settled, reason, message)
