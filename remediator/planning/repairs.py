"""The repair ladders of one plan: for each node whose rule's taint is on and whose rule names a ladder, the step under
way, the next one, or the end (docs/repair.md).

Pure, like the rest of planning: it reads the snapshot (each node's `nodemedic.io/repair` annotation is the ladder's
state, the agent's `NodemedicRepair` condition its answer), the policy and the taints the rules leave on each node,
and returns what to write. A step starts only past the rails (rails.py); a reboot or a replace asks for the node to be
drained first and starts once nothing but DaemonSet and mirror pods is left. Cost: nothing at all while no rule has a
ladder and no node carries one; else linear in nodes plus the pods of nodes that wait for a drain.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from nodemedic_common.durations import format_duration, whole_seconds
from nodemedic_common.repair_contract import (
    ANSWER_CONDITION,
    HOLD_ANNOTATION,
    NEXT_ANNOTATION,
    REPAIR_ANNOTATION,
    AnswerReason,
    RepairAction,
    answered_id,
)
from remediator.model.records import NodeRecord, Taint
from remediator.planning.owned_taints import OwnedTaint, strategy_owned
from remediator.planning.repair_rails import (
    ACTING,
    blocking,
    group_of,
    halted_groups,
    left_to_drain,
    opted_out,
    started_within,
)
from remediator.policy.model import Policy
from remediator.policy.repair import DISRUPTIVE, RepairStep
from remediator.policy.rules import TaintRule
from remediator.repair.decisions import RepairEnd, RepairPlan, RepairStart, RepairWait
from remediator.repair.state import LadderState, StateError, Tried, parse_state, step_id
from remediator.state.snapshot import Snapshot

PERSON = RepairStep(RepairAction.PERSON, dt.timedelta(0))
SHOWN_PODS = 3  # pods named in a "draining" wait


@dataclass
class RepairOutcome:
    plan: RepairPlan = field(default_factory=RepairPlan)
    drain: dict[str, list[Taint]] = field(default_factory=dict)  # node -> the rule taint its pods must leave for
    next_check: dt.datetime | None = None


def plan_repairs(snapshot: Snapshot, policy: Policy, owned_after: Mapping[str, list[OwnedTaint]]) -> RepairOutcome:
    out = RepairOutcome()
    states: dict[str, LadderState] = {}
    for name, node in snapshot.nodes.items():
        text = node.annotations.get(REPAIR_ANNOTATION)
        if text is None:
            continue
        try:
            states[name] = parse_state(text)
        except StateError as e:
            out.plan.unreadable[name] = f"{REPAIR_ANNOTATION}: {e}"
    ladders = {r.name: r for r in policy.rules if r.repair}
    if not ladders and not states:
        return out
    run = _Run(snapshot, policy, owned_after, states, out)
    for name in sorted(snapshot.nodes):
        run.node(snapshot.nodes[name], ladders)
    return out


class _Run:
    def __init__(self, snapshot: Snapshot, policy: Policy, owned_after: Mapping[str, list[OwnedTaint]],
                 states: dict[str, LadderState], out: RepairOutcome) -> None:
        self.snapshot, self.policy, self.owned_after, self.states, self.out = snapshot, policy, owned_after, states, out
        self.now = snapshot.now
        self.settings = policy.repair
        self.halted = halted_groups(snapshot, self.settings, owned_after)
        self.busy: Counter[str] = Counter(
            group_of(snapshot.nodes[n], self.settings) for n, s in states.items()
            if s.action != RepairAction.PERSON and n in snapshot.nodes)
        self.rate = started_within(states.values(), self.now)
        out.plan.halted = dict(self.halted)

    def due(self, t: dt.datetime) -> None:
        self.out.next_check = t if self.out.next_check is None else min(self.out.next_check, t)

    def wait(self, node: NodeRecord, rule: TaintRule, step: RepairStep, why: str, *,
             until: dt.datetime | None = None, halted: bool = False) -> None:
        self.out.plan.waiting.append(RepairWait(node.name, rule.name, step.describe(), why, until, halted))
        if until is not None:
            self.due(until)

    # --- one node --------------------------------------------------------------------------------------------------
    def node(self, node: NodeRecord, ladders: Mapping[str, TaintRule]) -> None:
        state = self.states.get(node.name)
        if state is None:
            self._new(node, ladders)
            return
        self.out.plan.in_repair[node.name] = state
        rule = ladders.get(state.rule)
        if rule is None:
            self._end(node, state, f"rule {state.rule!r} no longer has a repair ladder", repaired=False)
        elif not _matches(node, rule) and node.ready:
            self._end(node, state, f"{_cleared(node, rule)} after {_what(state)}", repaired=True)
        elif HOLD_ANNOTATION in node.annotations:  # a hold stops everything, a person's --next included
            self.wait(node, rule, rule.repair[state.step] if state.step < len(rule.repair) else PERSON, _held(node))
        elif node.annotations.get(NEXT_ANNOTATION) == state.id:
            ended = _tried(state, self.now, "ended by a person (kubectl nodemedic repair --next)")
            if state.action == RepairAction.PERSON:  # a person sends the node round the ladder again
                self._start(node, rule, index=0, prior=None, history=(*state.history, ended),
                            cause="a person asked for the ladder again", consumes_next=True)
            else:
                self._start(node, rule, index=state.step + 1, prior=state, history=(*state.history, ended),
                            cause=f"a person ended {_what(state)}", consumes_next=True)
        else:
            self._going(node, rule, state)

    def _new(self, node: NodeRecord, ladders: Mapping[str, TaintRule]) -> None:
        rule = self._active(node, ladders)
        if rule is None:
            return
        if HOLD_ANNOTATION in node.annotations:
            self.wait(node, rule, rule.repair[0], _held(node))
            return
        self._start(node, rule, index=0, prior=None, history=(),
                    cause=f"{_condition(node, rule, self.now)}; its taint is on")

    def _going(self, node: NodeRecord, rule: TaintRule, state: LadderState) -> None:
        """A step under way: wait for it, or end it and take the next."""
        step = rule.repair[state.step] if state.step < len(rule.repair) else PERSON
        if state.action == RepairAction.PERSON:
            self.wait(node, rule, step, f"handed to a person at {_stamp(state.requested)}: nodemedic takes no further "
                                        "step (kubectl nodemedic repair --resume sends it round the ladder again)")
            return
        deadline = state.requested + step.wait
        refused = _agent_gave_up(node, state)
        if refused is not None:
            result = refused
        elif self.now < deadline:
            self.wait(node, rule, step, _in_progress(node, rule, state), until=deadline)
            return
        elif _matches(node, rule):
            result = f"{_condition(node, rule, self.now)}: still there {format_duration(step.wait)} after it"
        else:
            result = f"the node is not Ready {format_duration(step.wait)} after it"
        self._start(node, rule, index=state.step + 1, prior=state,
                    history=(*state.history, _tried(state, self.now, result)), cause=f"{_what(state)}: {result}")

    def _active(self, node: NodeRecord, ladders: Mapping[str, TaintRule]) -> TaintRule | None:
        """The first rule with a ladder whose condition holds and whose taint nodemedic keeps on the node."""
        owned_rules = {r for o in self.owned_after.get(node.name, ()) if not strategy_owned(o) for r in o.rules}
        present = {t.identity() for t in node.taints}  # on the node already, not only planned this cycle
        for rule in ladders.values():
            if rule.name in owned_rules and rule.taint.identity() in present and _matches(node, rule):
                return rule
        return None

    # --- taking a step ---------------------------------------------------------------------------------------------
    def _start(self, node: NodeRecord, rule: TaintRule, *, index: int, prior: LadderState | None,
               history: tuple[Tried, ...], cause: str, consumes_next: bool = False) -> None:
        ladder = rule.repair
        while index < len(ladder) and ladder[index].action == RepairAction.REPLACE and not node.claim:
            history = (*history, Tried(index, RepairAction.REPLACE, "", self.now, self.now,
                                       "skipped: no Karpenter NodeClaim owns this node, and no other node "
                                       "autoscaler replaces one node on request"))
            index += 1
        step = ladder[index] if index < len(ladder) else PERSON  # a ladder without `person` still ends with one
        if step.action != RepairAction.PERSON and not self._may_start(node, rule, step, new=prior is None):
            return
        state = LadderState(id=step_id(self.now, index), rule=rule.name, step=index, action=step.action,
                            service=step.service, requested=self.now, started=prior.started if prior else self.now,
                            history=history)
        self.out.plan.starts.append(RepairStart(node.name, state, cause, claim=node.claim if step.action ==
                                                RepairAction.REPLACE else "", consumes_next=consumes_next))
        self.out.plan.in_repair[node.name] = state
        if prior is None and step.action != RepairAction.PERSON:
            self.busy[group_of(node, self.settings)] += 1
        self.rate += step.action in ACTING
        if step.action != RepairAction.PERSON:
            self.due(self.now + step.wait)

    def _may_start(self, node: NodeRecord, rule: TaintRule, step: RepairStep, *, new: bool) -> bool:
        settings = self.settings
        why = opted_out(node, self.policy)
        if why is not None:
            self.wait(node, rule, step, why)
            return False
        group = group_of(node, settings)
        if group in self.halted:
            self.wait(node, rule, step, self.halted[group], halted=True)
            return False
        if new and self.busy[group] >= settings.max_concurrent:
            self.wait(node, rule, step, f"{self.busy[group]} node(s) of {group} in repair already "
                                        f"(repair.maxConcurrent {settings.max_concurrent})")
            return False
        if step.action in ACTING and self.rate >= settings.max_per_hour:
            self.wait(node, rule, step, f"{self.rate} repair steps started in the last hour "
                                        f"(repair.maxPerHour {settings.max_per_hour})")
            return False
        if step.action not in DISRUPTIVE:
            return True
        if not settings.window.is_open(self.now):
            self.wait(node, rule, step, f"outside the repair window ({settings.window.describe()})",
                      until=settings.window.next_open(self.now))
            return False
        blockers = blocking(self.snapshot, node.name, settings)
        if blockers:
            self.wait(node, rule, step, f"{len(blockers)} pod(s) matching repair.blockingPodSelector run here: "
                                        + ", ".join(p.key for p in blockers[:SHOWN_PODS]))
            return False
        left = left_to_drain(self.snapshot, node.name)
        if left:
            self.out.drain.setdefault(node.name, []).append(rule.taint)
            self.wait(node, rule, step, f"draining first (every PDB held): {len(left)} pod(s) left: "
                                        + ", ".join(p.key for p in left[:SHOWN_PODS]))
            return False
        return True

    def _end(self, node: NodeRecord, state: LadderState, result: str, *, repaired: bool) -> None:
        self.out.plan.ends.append(RepairEnd(node.name, state, result, repaired))
        del self.out.plan.in_repair[node.name]


def _matches(node: NodeRecord, rule: TaintRule) -> bool:
    c = node.condition(rule.condition_type)
    return c is not None and c.status == rule.condition_status


def _condition(node: NodeRecord, rule: TaintRule, now: dt.datetime) -> str:
    c = node.condition(rule.condition_type)
    since = c.held_since() if c is not None else None
    state = f"{rule.condition_type}={rule.condition_status}"
    return state if since is None else f"{state} for {format_duration(whole_seconds(now - since))}"


def _cleared(node: NodeRecord, rule: TaintRule) -> str:
    c = node.condition(rule.condition_type)
    return f"{rule.condition_type} absent" if c is None else f"{c.type}={c.status}"


def _what(state: LadderState) -> str:
    return f"{state.action} {state.service}" if state.service else str(state.action)


def _tried(state: LadderState, now: dt.datetime, result: str) -> Tried:
    return Tried(state.step, state.action, state.service, state.requested, now, result)


def _held(node: NodeRecord) -> str:
    return f"held by a person ({HOLD_ANNOTATION}: {node.annotations[HOLD_ANNOTATION][:120]})"


def _stamp(t: dt.datetime) -> str:
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _answer(node: NodeRecord, state: LadderState) -> tuple[str, str] | None:
    """(reason, message) of the agent's answer to this very step, or None when it has not answered it."""
    c = node.condition(ANSWER_CONDITION)
    if c is None or answered_id(c.message) != state.id:
        return None
    return c.reason, c.message


def _agent_gave_up(node: NodeRecord, state: LadderState) -> str | None:
    if state.action not in (RepairAction.RESTART, RepairAction.REBOOT):
        return None
    answer = _answer(node, state)
    if answer is None or answer[0] not in (AnswerReason.FAILED, AnswerReason.REFUSED):
        return None
    return f"the agent answered {answer[0]}: {answer[1].split(': ', 1)[-1][:200]}"


def _in_progress(node: NodeRecord, rule: TaintRule, state: LadderState) -> str:
    answer = _answer(node, state)
    if state.action == RepairAction.REPLACE:
        heard = "the node autoscaler replaces the node"
    elif answer is None:
        heard = "the agent has not answered yet"
    else:
        heard = f"the agent answered {answer[0]}: {answer[1].split(': ', 1)[-1][:200]}"
    now = f"waiting for {_cleared(node, rule)} to clear" if _matches(node, rule) \
        else f"{_cleared(node, rule)}, waiting for the node to be Ready"
    return f"{_what(state)} asked at {_stamp(state.requested)}; {heard}; {now}"
