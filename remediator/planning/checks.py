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

from remediator.model import PodRecord
from remediator.planning.books import Books


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


def _safety_rail(books: Books, pod: PodRecord, terminal: bool) -> Refusal | None:
    why = books.hold(pod.node_name)
    return None if why is None else Refusal(Verdict.PROTECTED, why)


def _default_evictor(books: Books, pod: PodRecord, terminal: bool) -> Refusal | None:
    why = books.protection(pod, terminal=terminal)
    return None if why is None else Refusal(Verdict.PROTECTED, why)


def _loop_guard(books: Books, pod: PodRecord, terminal: bool) -> Refusal | None:
    why = books.loop_guard(pod)
    return None if why is None else Refusal(Verdict.DEFERRED, why)


def _pdb_budget(books: Books, pod: PodRecord, terminal: bool) -> Refusal | None:
    why = books.pdb_refusal(pod)
    return None if why is None else Refusal(Verdict.DEFERRED, why)


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
