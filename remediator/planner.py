"""One planning cycle: conditions → taints → strategies (deschedule kind first, then balance) → Plan.

Pure: it reads one Snapshot and the policy and returns a Plan; the only state it carries between cycles is
`PlannerMemory`, which the controller owns. Nothing here writes to the cluster. Every eviction of every strategy
goes through one gate (`cycle.Cycle`): safety rails, DefaultEvictor, limits, node fit, and the cycle's books.
Cost is linear in nodes + pods, plus one node-fit search (linear in nodes) per pod the limits let through:
per-node requests are summed once per cycle, and a pod shape that fitted nowhere is not searched again.
"""

from __future__ import annotations

from remediator.heap import collection_paused
from remediator.model import CrashLoopNode, Plan, Protected, Snapshot, Taint, TaintChange
from remediator.planning.cycle import LOOP_GUARD, Cycle, PlannerMemory
from remediator.planning.scope import in_scope
from remediator.planning.taints import plan_taints
from remediator.policy.model import STRATEGY_PREFIX, Policy
from remediator.strategies import KINDS, lookup
from remediator.strategies.high_node_utilization.consolidation import (
    CONSOLIDATION_OWNER,
    CONSOLIDATION_TAINT,
    consolidating,
)
from remediator.strategies.high_node_utilization.plan import NAME as HNU

__all__ = ["PlannerMemory", "plan_cycle"]


def plan_cycle(snapshot: Snapshot, policy: Policy, memory: PlannerMemory) -> Plan:
    with collection_paused():
        return _plan_cycle(snapshot, policy, memory)


def _plan_cycle(snapshot: Snapshot, policy: Policy, memory: PlannerMemory) -> Plan:
    snapshot = in_scope(snapshot, policy.node_selector)
    taints = plan_taints(snapshot, policy, memory.clear_since)
    plan = Plan(taints_add=taints.adds, taints_remove=taints.removes, held=taints.held,
                breaker_open=taints.breaker_open, tainted_limit=taints.tainted_limit, next_check=taints.next_check)
    memory.forget_before(snapshot.now - LOOP_GUARD)
    configured = [(lookup(s.name), s.args) for s in policy.strategies]
    draining = consolidating(snapshot)  # read once: the ownership annotation of every node is parsed for it
    if not any(s.name == HNU for s, _ in configured):
        for node in sorted(draining):  # the strategy is gone: give its nodes back
            plan.taints_remove.append(TaintChange(node, CONSOLIDATION_TAINT, (CONSOLIDATION_OWNER,),
                                                  "HighNodeUtilization no longer configured"))
    if policy.safety.paused:
        return plan  # a pause stops every eviction, not only new taints
    planned_taints: dict[str, list[Taint]] = {}
    for c in taints.adds:
        planned_taints.setdefault(c.node, []).append(c.taint)
    # No destination: nodes being drained or tainted, and nodes whose problem a safety rail only held back.
    exclude = set(taints.evict_taints) | set(planned_taints) | {h.node for h in taints.held}
    exclude |= set(draining)
    cycle = Cycle(snapshot, policy, plan, memory, exclude=exclude, planned_taints=planned_taints,
                  consolidating=draining, leaving=memory.forget_left(snapshot))
    configured.sort(key=lambda sa: KINDS.index(sa[0].kind))  # stable: policy order within a kind
    for strategy, args in configured:
        if strategy.kind == "deschedule":
            for c in strategy.plan(snapshot, args, evict_taints=taints.evict_taints, planned_taints=planned_taints,
                                   evicting=cycle.evicting, fits=cycle.fits):
                if isinstance(c, CrashLoopNode):
                    plan.crash_loop_nodes.append(c)
                else:
                    cycle.admit(c, terminal=strategy.terminal_pods)
        else:
            strategy.plan(snapshot, args, cycle)
    if not policy.window.is_open(snapshot.now):
        _close(plan, policy, snapshot)
    return plan


def _close(plan: Plan, policy: Policy, snapshot: Snapshot) -> None:
    """Outside the maintenance window: the plan still shows every eviction, as deferred, and no node is emptied for
    a strategy; the rules' taints stay (keeping new pods off a sick node disrupts nothing)."""
    why = f"outside the maintenance window ({policy.window.describe()})"
    plan.deferred.extend(Protected(e.pod, f"{why}: {e.strategy}: {e.reason}") for e in plan.evictions)
    plan.evictions = []
    plan.taints_add = [c for c in plan.taints_add if not all(r.startswith(STRATEGY_PREFIX) for r in c.rules)]
    opens = policy.window.next_open(snapshot.now)
    plan.next_check = opens if plan.next_check is None else min(plan.next_check, opens)
