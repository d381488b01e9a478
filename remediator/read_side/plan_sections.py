"""/plan's two sections of their own, `repair` (the repair ladders) and `darkNodes` (silent nodes, fences,
NodeClaims deleted): each row with every field of its JSON, made from the plan, written and read back."""

from __future__ import annotations

from dataclasses import dataclass

from nodemedic_common.repair_contract import format_time
from remediator.read_side.fields import Fields
from remediator.repair.dark_decisions import ClaimDelete, DarkPlan, Fence, SilentNode, Unfence
from remediator.repair.decisions import RepairEnd, RepairPlan, RepairStart, RepairWait


@dataclass(frozen=True)
class RepairStartRow:
    """A ladder's step to start."""

    node: str
    rule: str
    step: int  # from 1
    action: str
    service: str  # "": none
    node_claim: str  # replace: the node's NodeClaim; "": none
    id: str
    cause: str

    @staticmethod
    def of(s: RepairStart) -> RepairStartRow:
        state = s.state
        return RepairStartRow(s.node, state.rule, state.step + 1, str(state.action), state.service, s.claim, state.id,
                              s.cause)

    def to_json(self) -> dict[str, object]:
        return {"node": self.node, "rule": self.rule, "step": self.step, "action": self.action,
                **({"service": self.service} if self.service else {}),
                **({"nodeClaim": self.node_claim} if self.node_claim else {}), "id": self.id, "cause": self.cause}

    @staticmethod
    def read(f: Fields) -> RepairStartRow:
        return RepairStartRow(f.text("node"), f.text("rule"), f.integer("step"), f.text("action"),
                              f.optional_text("service") or "", f.optional_text("nodeClaim") or "", f.text("id"),
                              f.text("cause"))


@dataclass(frozen=True)
class RepairEndRow:
    node: str
    rule: str
    repaired: bool
    result: str

    @staticmethod
    def of(e: RepairEnd) -> RepairEndRow:
        return RepairEndRow(e.node, e.state.rule, e.repaired, e.result)

    def to_json(self) -> dict[str, object]:
        return {"node": self.node, "rule": self.rule, "repaired": self.repaired, "result": self.result}

    @staticmethod
    def read(f: Fields) -> RepairEndRow:
        return RepairEndRow(f.text("node"), f.text("rule"), f.flag("repaired"), f.text("result"))


@dataclass(frozen=True)
class RepairWaitRow:
    node: str
    rule: str
    step: str  # the step under way or waiting, described
    why: str
    until: str | None = None  # RFC 3339; None: it does not end by itself
    halted: bool = False

    @staticmethod
    def of(w: RepairWait) -> RepairWaitRow:
        return RepairWaitRow(w.node, w.rule, w.step, w.why, format_time(w.until) if w.until else None, w.halted)

    def to_json(self) -> dict[str, object]:
        return {"node": self.node, "rule": self.rule, "step": self.step, "why": self.why,
                **({"until": self.until} if self.until else {}), **({"halted": True} if self.halted else {})}

    @staticmethod
    def read(f: Fields) -> RepairWaitRow:
        return RepairWaitRow(f.text("node"), f.text("rule"), f.text("step"), f.text("why"), f.optional_text("until"),
                             f.flag("halted"))


@dataclass(frozen=True)
class RepairSection:
    starts: tuple[RepairStartRow, ...] = ()
    ends: tuple[RepairEndRow, ...] = ()
    waiting: tuple[RepairWaitRow, ...] = ()
    needs_a_person: tuple[str, ...] = ()  # nodes
    halted: tuple[tuple[str, str], ...] = ()  # group -> why nothing in it is repaired
    unreadable: tuple[tuple[str, str], ...] = ()  # node -> why its annotation is not a ladder

    @staticmethod
    def of(repair: RepairPlan) -> RepairSection:
        return RepairSection(tuple(RepairStartRow.of(s) for s in repair.starts),
                             tuple(RepairEndRow.of(e) for e in repair.ends),
                             tuple(RepairWaitRow.of(w) for w in repair.waiting), tuple(repair.needs_a_person()),
                             tuple(repair.halted.items()), tuple(repair.unreadable.items()))

    def to_json(self) -> dict[str, object]:
        return {"start": [s.to_json() for s in self.starts], "end": [e.to_json() for e in self.ends],
                "waiting": [w.to_json() for w in self.waiting], "needsAPerson": list(self.needs_a_person),
                "halted": dict(self.halted), "unreadable": dict(self.unreadable)}

    @staticmethod
    def read(f: Fields) -> RepairSection:
        return RepairSection(f.rows("start", RepairStartRow.read), f.rows("end", RepairEndRow.read),
                             f.rows("waiting", RepairWaitRow.read), f.texts("needsAPerson"), f.text_map("halted"),
                             f.text_map("unreadable"))


@dataclass(frozen=True)
class SilentRow:
    node: str
    seen: str  # kubelet-silent, dark, fenced, replacing, returning
    why: str
    kubelet_silent_since: str | None = None  # RFC 3339
    agent_heard: str | None = None
    needs_evidence: bool = False
    halted: bool = False

    @staticmethod
    def of(n: SilentNode) -> SilentRow:
        return SilentRow(n.node, str(n.seen), n.why,
                         format_time(n.kubelet_silent_since) if n.kubelet_silent_since else None,
                         format_time(n.agent_heard) if n.agent_heard else None, n.needs_evidence, n.halted)

    def to_json(self) -> dict[str, object]:
        return {"node": self.node, "seen": self.seen, "why": self.why,
                **({"kubeletSilentSince": self.kubelet_silent_since} if self.kubelet_silent_since else {}),
                **({"agentHeard": self.agent_heard} if self.agent_heard else {}),
                **({"needsEvidence": True} if self.needs_evidence else {}), **({"halted": True} if self.halted else {})}

    @staticmethod
    def read(f: Fields) -> SilentRow:
        return SilentRow(f.text("node"), f.text("seen"), f.text("why"), f.optional_text("kubeletSilentSince"),
                         f.optional_text("agentHeard"), f.flag("needsEvidence"), f.flag("halted"))


@dataclass(frozen=True)
class FreeingRow:
    """A fence (`what` = its evidence) or a NodeClaim deleted (`what` = the NodeClaim), and the pods it frees."""

    node: str
    what: str
    detail: str
    frees: tuple[str, ...]  # "namespace/name"

    @staticmethod
    def of(action: Fence | ClaimDelete) -> FreeingRow:
        what = str(action.evidence) if isinstance(action, Fence) else action.claim
        return FreeingRow(action.node, what, action.detail, action.pods)

    def to_json(self, what_key: str) -> dict[str, object]:
        return {"node": self.node, what_key: self.what, "detail": self.detail, "frees": list(self.frees)}

    @staticmethod
    def read(what_key: str, f: Fields) -> FreeingRow:
        return FreeingRow(f.text("node"), f.text(what_key), f.text("detail"), f.texts("frees"))


@dataclass(frozen=True)
class UnfenceRow:
    node: str
    why: str
    taint: bool  # the out-of-service taint comes off (nodemedic's); False: a person's confirmation ends

    @staticmethod
    def of(u: Unfence) -> UnfenceRow:
        return UnfenceRow(u.node, u.why, u.taint)

    def to_json(self) -> dict[str, object]:
        return {"node": self.node, "why": self.why, "taint": self.taint}

    @staticmethod
    def read(f: Fields) -> UnfenceRow:
        return UnfenceRow(f.text("node"), f.text("why"), f.flag("taint"))


@dataclass(frozen=True)
class DarkSection:
    silent: tuple[SilentRow, ...] = ()  # by node
    fences: tuple[FreeingRow, ...] = ()
    claim_deletes: tuple[FreeingRow, ...] = ()
    unfences: tuple[UnfenceRow, ...] = ()
    halted: tuple[tuple[str, str], ...] = ()  # group -> why nothing in it is fenced

    @staticmethod
    def of(dark: DarkPlan) -> DarkSection:
        return DarkSection(tuple(SilentRow.of(n) for n in sorted(dark.nodes.values(), key=lambda n: n.node)),
                           tuple(FreeingRow.of(f) for f in dark.fences),
                           tuple(FreeingRow.of(c) for c in dark.claim_deletes),
                           tuple(UnfenceRow.of(u) for u in dark.unfences), tuple(dark.halted.items()))

    def to_json(self) -> dict[str, object]:
        return {"nodes": [n.to_json() for n in self.silent], "fence": [f.to_json("evidence") for f in self.fences],
                "deleteNodeClaim": [c.to_json("nodeClaim") for c in self.claim_deletes],
                "unfence": [u.to_json() for u in self.unfences], "halted": dict(self.halted)}

    @staticmethod
    def read(f: Fields) -> DarkSection:
        return DarkSection(f.rows("nodes", SilentRow.read), f.rows("fence", lambda r: FreeingRow.read("evidence", r)),
                           f.rows("deleteNodeClaim", lambda r: FreeingRow.read("nodeClaim", r)),
                           f.rows("unfence", UnfenceRow.read), f.text_map("halted"))
