"""/status: who a remediator replica is, whether it leads, how it runs, its version and its policy."""

from __future__ import annotations

from dataclasses import dataclass

from remediator.read_side.fields import Fields


@dataclass(frozen=True)
class StatusAnswer:
    identity: str  # the Lease holder identity this replica uses
    leading: bool
    dry_run: bool
    mode: str  # "deployment", or "once" for a Job's run
    version: str  # the remediator's: `kubectl nodemedic` compares it with its own
    policy_file: str
    policy_sha256: str  # its first 12 hex digits

    def to_json(self) -> dict[str, object]:
        return {"identity": self.identity, "leading": self.leading, "dryRun": self.dry_run, "mode": self.mode,
                "version": self.version, "policy": {"file": self.policy_file, "sha256": self.policy_sha256}}

    @staticmethod
    def read(doc: object) -> StatusAnswer:
        f = Fields.of(doc, "/status")
        policy = f.section("policy") or Fields({}, "/status: policy")
        return StatusAnswer(identity=f.text("identity"), leading=f.flag("leading"), dry_run=f.flag("dryRun"),
                            mode=f.text("mode"), version=f.text("version"), policy_file=policy.text("file"),
                            policy_sha256=policy.text("sha256"))
