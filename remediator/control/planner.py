"""One plan: conditions → taints → strategies (deschedule kind first, then balance) → Plan.

Pure: it reads one Snapshot, the policy and the memory of earlier cycles (evictions under way included) and returns
the Plan the controller applies as it is. Nothing here writes to the cluster. Every eviction of every strategy goes
through the gate (planning/gate.py); whatever else a strategy wants comes back as Wants and is merged here, behind
the same rails for every strategy. Cost is linear in nodes + pods, plus one node-fit search (linear in nodes) per
pod the limits let through: per-node requests are summed once per plan, and a pod shape that fitted nowhere is not
searched again.
"""

from __future__ import annotations

from remediator.model.plan import Held, HoldReason, Plan, PlannedEviction, Proposal, Protected, TaintChange
from remediator.model.records import NodeRecord, Taint
from remediator.planning.books import Books
from remediator.planning.dark_nodes import plan_dark
from remediator.planning.gate import Gate
from remediator.planning.memory import LOOP_GUARD, PlannerMemory
from remediator.planning.node_selection import in_scope
from remediator.planning.owned_taints import by_strategy, carrying, strategy_owner
from remediator.planning.rails import Hold, safety_hold
from remediator.planning.repairs import RepairOutcome, plan_repairs
from remediator.planning.scheduler_loops import held_loops, remember_sizes
from remediator.planning.taints import TaintPlan, plan_taints
from remediator.planning.wants import Wants
from remediator.planning.zone_exposure import zone_exposure
from remediator.policy.model import Policy
from remediator.state.heap import collection_paused
from remediator.state.snapshot import Snapshot
from remediator.strategies import KINDS, STRATEGIES, Strategy, lookup

__all__ = ["PlannerMemory", "make_plan"]


def make_plan(snapshot: Snapshot, policy: Policy, memory: PlannerMemory) -> Plan:
    with collection_paused():
        return _make_plan(snapshot, policy, memory)


def _make_plan(snapshot: Snapshot, policy: Policy, memory: PlannerMemory) -> Plan:
    snapshot = in_scope(snapshot, policy.node_selector)
    taints = plan_taints(snapshot, policy, memory.clear_since)
    repairs = _repairs(snapshot, policy, taints)
    dark, dark_check = plan_dark(snapshot, policy, taints.owned_after)
    checks = [t for t in (taints.next_check, repairs.next_check, dark_check) if t is not None]
    plan = Plan(taints_add=taints.adds, taints_remove=taints.removes, held=taints.held,
                breaker_open=taints.breaker_open, tainted_limit=taints.tainted_limit,
                next_check=min(checks, default=None), repair=repairs.plan, dark=dark,
                reports={s.name: s.standing_report for s in STRATEGIES.values() if s.standing_report is not None})
    memory.forget_before(snapshot.now - LOOP_GUARD)
    plan.scheduler_loops = held_loops(snapshot, memory)
    plan.zone_exposure = zone_exposure(snapshot, policy.scheduler.min_surviving_share)
    plan.min_surviving_share = policy.scheduler.min_surviving_share
    configured = [(lookup(s.name), s.args) for s in policy.strategies]
    names = {s.name for s, _ in configured}
    for name in [n for n in memory.strategies if n not in names]:
        del memory.strategies[name]
    # Read once: the ownership annotation of every node is parsed for it.
    owned = {s.name: carrying(snapshot, s.taint, strategy_owner(s.name))
             for s in STRATEGIES.values() if s.taint is not None}
    for name, nodes in sorted(owned.items()):
        if name not in names:  # the strategy is gone: give its nodes back
            taint = STRATEGIES[name].taint
            assert taint is not None
            plan.taints_remove.extend(TaintChange(node, taint, (strategy_owner(name),), f"{name} no longer configured")
                                      for node in sorted(nodes))
    if policy.safety.paused:
        return plan  # a pause stops every eviction, not only new taints
    planned_taints: dict[str, list[Taint]] = {}
    for c in taints.adds:
        planned_taints.setdefault(c.node, []).append(c.taint)
    # No destination: nodes being drained or tainted, and nodes whose problem a safety rail only held back.
    exclude = set(taints.evict_taints) | set(planned_taints) | {h.node for h in taints.held}
    for nodes in owned.values():
        exclude |= set(nodes)
    books = Books(snapshot, policy, plan, memory, exclude=exclude, planned_taints=planned_taints, carrying=owned,
                  leaving=memory.forget_left(snapshot))
    configured.sort(key=lambda sa: KINDS.index(sa[0].kind))  # stable: policy order within a kind
    for strategy, args in configured:
        gate = Gate(books, strategy=strategy.name, terminal_pods=strategy.terminal_pods,
                    evict_taints=taints.evict_taints, breaker_open=plan.breaker_open)
        _merge(plan, strategy.plan(snapshot, args, gate), snapshot=snapshot, policy=policy, memory=memory,
               strategy=strategy, args=args)
    _propose(plan, {s.name for s, args in configured if s.approval(args) == "required"}, memory)
    remember_sizes(plan, snapshot, memory, {s.name for s, _ in configured if s.kind == "balance"})
    if not policy.window.is_open(snapshot.now):
        _close(plan, policy, snapshot)
    return plan


def _repairs(snapshot: Snapshot, policy: Policy, taints: TaintPlan) -> RepairOutcome:
    """The repair ladders (remediator/repair/); a node a reboot or replace waits on is drained for its rule's taint by
    RemovePodsViolatingNodeTaints, as an evicting rule's node is."""
    repairs = plan_repairs(snapshot, policy, taints.owned_after)
    for node, drain in repairs.drain.items():
        evicting = taints.evict_taints.setdefault(node, [])
        evicting += [t for t in drain if t not in evicting]
    return repairs


def _merge(plan: Plan, wants: Wants, *, snapshot: Snapshot, policy: Policy, memory: PlannerMemory,
           strategy: Strategy[object], args: object) -> None:
    """Add what a strategy wants besides its evictions to the plan: its taint behind the rails, its report as it is,
    its memory for the next cycle."""
    if strategy.taint is not None and strategy.taints(args):
        owner = (strategy_owner(strategy.name),)
        for want in wants.untaint:
            plan.taints_remove.append(TaintChange(want.node, strategy.taint, owner, want.cause))
        for want in wants.taint:
            node = snapshot.nodes.get(want.node)
            if node is None:
                continue  # not a node of this plan: nothing to taint
            hold = _rail(node, policy, plan)
            if hold is None:
                plan.taints_add.append(TaintChange(want.node, strategy.taint, owner, want.cause))
            else:
                plan.held.append(Held(want.node, strategy.taint, owner, hold.reason, hold.why))
    if wants.report is not None:
        plan.reports[strategy.name] = wants.report
    if wants.remember is not None:
        memory.strategies[strategy.name] = dict(wants.remember)


def _propose(plan: Plan, required: set[str], memory: PlannerMemory) -> None:
    """The moves of engines whose approval is required leave the evictions: each engine's become one Proposal, unless a
    migration of that engine is still open (one at a time: a second plan would count on the cluster before the first
    ran)."""
    if not required:
        return
    moves: dict[str, list[PlannedEviction]] = {}
    for e in plan.evictions:
        if e.strategy in required:
            moves.setdefault(e.strategy, []).append(e)
    if not moves:
        return
    plan.evictions = [e for e in plan.evictions if e.strategy not in required]
    for engine, planned in sorted(moves.items()):
        steps = [e for e in planned if e.destination is not None and e.destination != e.pod.node_name]
        open_one = memory.open_migrations.get(engine)
        why = f"migration {open_one} of {engine} is open: no new plan of it until that one finishes" if open_one \
            else None
        plan.deferred.extend(Protected(e.pod, f"{engine}: {why or 'no node planned for it: not a migration step'}")
                             for e in planned if why or e not in steps)
        if steps and why is None:
            report = plan.reports.get(engine)
            plan.proposals.append(Proposal(engine, tuple(steps), report.gain() if report is not None else None))


def _rail(node: NodeRecord, policy: Policy, plan: Plan) -> Hold | None:
    """Why a strategy's taint may not go on `node` now: the safety rails, and the circuit breaker (while it holds a
    problem's taint back, no node is taken out of rotation for anything less)."""
    hold = safety_hold(node, policy.safety)
    if hold is None and plan.breaker_open:
        return Hold(HoldReason.CIRCUIT_BREAKER, "circuit breaker open: no node is taken out of rotation")
    return hold


def _close(plan: Plan, policy: Policy, snapshot: Snapshot) -> None:
    """Outside the maintenance window: the plan still shows every eviction, as deferred, and no node is emptied for
    a strategy; the rules' taints stay (keeping new pods off a sick node disrupts nothing)."""
    why = f"outside the maintenance window ({policy.window.describe()})"
    plan.deferred.extend(Protected(e.pod, f"{why}: {e.strategy}: {e.reason}") for e in plan.evictions)
    plan.evictions = []
    plan.taints_add = [c for c in plan.taints_add if not by_strategy(c.rules)]
    opens = policy.window.next_open(snapshot.now)
    plan.next_check = opens if plan.next_check is None else min(plan.next_check, opens)

