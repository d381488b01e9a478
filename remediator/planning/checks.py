"""The gate's checks, in the one order every entry point walks them (gate.py): a deschedule strategy's candidate
(`admit`), a balance strategy's move (`move`), the question before a move (`refusal`), and each half of an exchange.

A candidate is what a rule demands (the pod violates it); a move is optional (a better spread, an emptier node), so
a few checks apply to moves only: the limits stop the strategy's walk instead of deferring every pod after them,
and the loop guard and PDB budgets keep an optional move from churning a workload. Node fit comes last (gate.py):
a pod refused here neither pays for a node search nor holds room elsewhere, and a pod with nowhere to go does not
use up a limit.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from nodemedic_common.durations import format_duration, whole_seconds
from remediator.model.records import PodRecord
from remediator.planning.books import Books
from remediator.planning.memory import LOOP_GUARD
from remediator.planning.pod_protection import protection
from remediator.planning.rails import safety_hold


class Verdict(enum.Enum):
    ALREADY = "already decided"  # the first strategy to claim a pod decides it: nothing is recorded
    STOP_NODE = "stop node"  # no further pod may leave this node this plan: nothing is recorded
    STOP_PLAN = "stop plan"  # no further pod may leave any node this plan: nothing is recorded
    PROTECTED = "protected"  # recorded in Plan.protected: nodemedic will not evict it
    DEFERRED = "deferred"  # recorded in Plan.deferred: a limit, cool-down or budget says not now


@dataclass(frozen=True)
class Refusal:
    """A check's answer when it refuses a pod: what follows (the verdict) and why, for the plan's reader."""

    verdict: Verdict
    why: str


@dataclass(frozen=True)
class Check:
    """One named check; `moves_only`: it applies to a balance strategy's optional moves, not to candidates."""

    name: str
    moves_only: bool
    refuse: Callable[[Books, PodRecord, bool], Refusal | None]  # (books, pod, terminal pods allowed)


def _decided(books: Books, pod: PodRecord, terminal: bool) -> Refusal | None:
    return Refusal(Verdict.ALREADY, "already decided") if pod.key in books.decided else None


def _limits_used_up(books: Books, pod: PodRecord, terminal: bool) -> Refusal | None:
    why = books.limits.used_up(pod.node_name)
    if why is None:
        return None
    return Refusal(Verdict.STOP_PLAN if books.limits.exhausted() else Verdict.STOP_NODE, why)


def rail_hold(books: Books, node: str) -> str | None:
    """Why a safety rail keeps evictions off `node`, or None."""
    record = books.snapshot.nodes.get(node)
    hold = safety_hold(record, books.policy.safety) if record is not None else None
    return hold.why if hold is not None else None


def _safety_rail(books: Books, pod: PodRecord, terminal: bool) -> Refusal | None:
    why = rail_hold(books, pod.node_name)
    return None if why is None else Refusal(Verdict.PROTECTED, why)


def _default_evictor(books: Books, pod: PodRecord, terminal: bool) -> Refusal | None:
    why = protection(pod, books.snapshot, books.policy.evictor, terminal=terminal)
    return None if why is None else Refusal(Verdict.PROTECTED, why)


def _loop_guard(books: Books, pod: PodRecord, terminal: bool) -> Refusal | None:
    """A balance move of a workload the scheduler keeps putting back (a scheduler loop), or whose pod moved off this
    node within LOOP_GUARD came back: not now."""
    owner = pod.controller
    if owner is None:
        return None
    loop = books.memory.loops.get(owner.uid)
    if loop is not None:
        return Refusal(Verdict.DEFERRED, f"loop guard: {loop.describe()}")
    last = books.memory.moved_off.get((owner.uid, pod.node_name))
    now = books.snapshot.now
    if last is None or now - last >= LOOP_GUARD:
        return None
    # Only a pod created after that move is a replacement that came back (creationTimestamp has whole seconds); the
    # owner's other original pods on the node may still move.
    if pod.created is not None and pod.created >= last.replace(microsecond=0):
        return Refusal(Verdict.DEFERRED, f"loop guard: a pod of {owner.kind}/{owner.name} was moved off "
                                         f"{pod.node_name} {format_duration(whole_seconds(now - last))} ago and its "
                                         "replacement came back")
    return None


def _pdb_budget(books: Books, pod: PodRecord, terminal: bool) -> Refusal | None:
    """A balance move is optional: never plan more of them than a PDB allows now (the taint strategy's evictions are
    not optional; the evictor retries those through the PDB's 429s)."""
    for b in books.pdbs_matching(pod):
        if books.pdb_used[(b.namespace, b.name)] >= b.disruptions_allowed:
            return Refusal(Verdict.DEFERRED, f"PodDisruptionBudget {b.namespace}/{b.name} allows "
                                             f"{b.disruptions_allowed} disruption(s) now")
    return None


def _limits_and_cooldown(books: Books, pod: PodRecord, terminal: bool) -> Refusal | None:
    why = books.limits.refusal(pod)
    return None if why is None else Refusal(Verdict.DEFERRED, why)


CHECKS = (
    Check("already decided", False, _decided),
    Check("eviction limits used up", True, _limits_used_up),
    Check("safety rails", False, _safety_rail),
    Check("DefaultEvictor", False, _default_evictor),
    Check("loop guard", True, _loop_guard),
    Check("PodDisruptionBudget budget", True, _pdb_budget),
    Check("eviction limits and owner cool-down", False, _limits_and_cooldown),
)
ORDER = (*(c.name for c in CHECKS), "node fit")
# Walked tens of thousands of times a plan: each entry point's list is made once.
_FOR_CANDIDATES = tuple(c.refuse for c in CHECKS if not c.moves_only)
_FOR_MOVES = tuple(c.refuse for c in CHECKS)


def walk(books: Books, pod: PodRecord, *, move: bool, terminal: bool = False) -> Refusal | None:
    """The first check that refuses `pod`, in ORDER (node fit aside), or None."""
    for refuse in _FOR_MOVES if move else _FOR_CANDIDATES:
        refusal = refuse(books, pod, terminal)
        if refusal is not None:
            return refusal
    return None
