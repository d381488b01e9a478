"""Why a node is (or is not) tainted, drained or left alone: every condition, rule, rail, limit, PDB and autoscaler
fact the remediator decides on for that node, in plain sentences, each with the time it changes on its own.

Pure and read-only: the snapshot, policy and plan of the last cycle in, sentences out. What `kubectl nodemedic why
NODE` prints (the remediator serves it on /why/NODE).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from nodemedic_common.durations import format_duration, whole_seconds
from remediator.model.plan import Plan
from remediator.model.records import Condition, NodeRecord, PodRecord
from remediator.planning.owned_taints import parse_owned, strategy_owned
from remediator.planning.pod_protection import MIRROR_ANNOTATION
from remediator.planning.rails import safety_hold
from remediator.policy.model import OWNED_TAINTS_ANNOTATION, Policy
from remediator.policy.rules import TaintRule
from remediator.scheduling.selectors import matches_labels
from remediator.state.snapshot import KARPENTER_NODEPOOL_LABEL, Snapshot


@dataclass(frozen=True)
class Fact:
    topic: str  # node, condition, rule, taint, rail, plan, strategy, repair, dark, pdb, autoscaler, timer
    sentence: str
    changes_at: dt.datetime | None = None  # when the fact changes with nothing else changing; None: not on its own


def why(name: str, snapshot: Snapshot, policy: Policy, plan: Plan) -> list[Fact]:
    node = snapshot.nodes.get(name)
    if node is None:
        return [Fact("node", f"{name} is not among the nodes the remediator plans for (gone, or outside the policy's "
                             "nodeSelector): nothing happens to it")]
    now = snapshot.now
    facts = [_state(node)]
    facts += [_condition(c, now) for c in node.conditions if c.type != "Ready"]
    facts += [_rule(r, node, now) for r in policy.rules]
    facts += _owned(node, policy, now)
    hold = safety_hold(node, policy.safety)
    if hold is not None:
        facts.append(Fact("rail", f"no taint is added and no pod evicted here: {hold.why}"))
    facts += _planned(name, plan)
    facts += [Fact("strategy", f"{strategy}: {sentence}")
              for strategy, report in plan.reports.items() for sentence in report.why(name)]
    facts += _repair(node, policy, plan)
    facts += _dark(name, plan)
    pods = [p for p in snapshot.pods(name) if p.live]
    facts += _pdbs(pods, snapshot)
    facts.append(_autoscaler(node, pods))
    if plan.next_check is not None:
        facts.append(Fact("timer", "the plan's next timer (a rule's `for` or `recoverAfter` on some node, the "
                                   "maintenance window) is due: the remediator plans again by then",
                          plan.next_check))
    return facts


def _state(node: NodeRecord) -> Fact:
    ready = "Ready" if node.ready else "not Ready"
    cordoned = ", cordoned" if node.unschedulable else ""
    return Fact("node", f"{node.name} is {ready}{cordoned}")


def _condition(c: Condition, now: dt.datetime) -> Fact:
    since = c.held_since()
    held = f" for {format_duration(whole_seconds(now - since))}" if since is not None else ""
    why = f" ({c.reason}: {c.message})" if c.reason or c.message else ""
    return Fact("condition", f"{c.type}={c.status}{held}{why}")


def _rule(r: TaintRule, node: NodeRecord, now: dt.datetime) -> Fact:
    taint = f"{r.taint.key}:{r.taint.effect}"
    c = node.condition(r.condition_type)
    if c is None or c.status != r.condition_status:
        state = "absent" if c is None else f"{c.status}"
        return Fact("rule", f"rule {r.name} does not apply: {r.condition_type} is {state}, not {r.condition_status}")
    since = c.held_since()
    evicts = "and its pods that do not tolerate it are evicted" if r.evict else "(no evictions: evict is false)"
    if since is None:
        if r.for_ > dt.timedelta(0):
            return Fact("rule", f"rule {r.name} waits: {r.condition_type}={c.status} has no transition time, so it "
                                f"cannot have lasted `for` {format_duration(r.for_)}")
        return Fact("rule", f"rule {r.name} applies: the node gets {taint} {evicts}")
    due = since + r.for_
    if now < due:
        return Fact("rule", f"rule {r.name} waits: {r.condition_type}={c.status} for "
                            f"{format_duration(whole_seconds(now - since))} of `for` {format_duration(r.for_)}; "
                            f"then the node gets {taint}", due)
    return Fact("rule", f"rule {r.name} applies: {r.condition_type}={c.status} for "
                        f"{format_duration(whole_seconds(now - since))}, so the node gets {taint} {evicts}")


def _owned(node: NodeRecord, policy: Policy, now: dt.datetime) -> list[Fact]:
    owned, problem = parse_owned(node.annotations.get(OWNED_TAINTS_ANNOTATION))
    if problem is not None:
        return [Fact("taint", f"nodemedic owns no taint here: {problem}")]
    present = {t.identity() for t in node.taints}
    facts = []
    for o in owned:
        if o.taint.identity() not in present:
            continue
        since = format_duration(whole_seconds(now - o.since))
        if strategy_owned(o):
            facts.append(Fact("taint", f"{o.taint.key}:{o.taint.effect} put by {', '.join(o.rules)} {since} ago "
                                       f"({o.cause}); that strategy takes it off"))
            continue
        rules = [r for r in policy.rules if r.name in o.rules and r.taint.identity() == o.taint.identity()]
        clear = [_clear_at(r, node) for r in rules]
        if not rules:
            facts.append(Fact("taint", f"{o.taint.key}:{o.taint.effect} since {since} ago; its rules left the "
                                       "policy, so it is removed"))
        elif all(t is not None for t in clear):
            last = max(t for t in clear if t is not None)
            facts.append(Fact("taint", f"{o.taint.key}:{o.taint.effect} since {since} ago ({o.cause}); every "
                                       "condition behind it has cleared, so it is removed after `recoverAfter`",
                              last if last > now else None))
        else:
            active = " or ".join(f"{r.condition_type}={r.condition_status}" for r in rules)
            facts.append(Fact("taint", f"{o.taint.key}:{o.taint.effect} since {since} ago ({o.cause}); it stays "
                                       f"while {active}"))
    return facts


def _clear_at(r: TaintRule, node: NodeRecord) -> dt.datetime | None:
    """When the rule's `recoverAfter` ends, if its condition has cleared (None: it has not, or its time is unknown)."""
    c = node.condition(r.condition_type)
    if c is not None and c.status == r.condition_status:
        return None
    since = c.held_since() if c is not None else None
    return since + r.recover_after if since is not None else None


def _planned(name: str, plan: Plan) -> list[Fact]:
    facts = [Fact("plan", f"this cycle adds {c.taint.key}:{c.taint.effect}: {c.cause}")
             for c in plan.taints_add if c.node == name]
    facts += [Fact("plan", f"this cycle removes {c.taint.key}:{c.taint.effect}: {c.cause}")
              for c in plan.taints_remove if c.node == name]
    facts += [Fact("plan", f"{h.taint.key} is held back: {h.why}") for h in plan.held if h.node == name]
    facts += [Fact("plan", f"evicting {e.pod.key} ({e.strategy}): {e.reason}")
              for e in plan.evictions if e.pod.node_name == name]
    facts += [Fact("plan", f"not evicting {p.pod.key}: {p.why}") for p in plan.protected if p.pod.node_name == name]
    facts += [Fact("plan", f"{p.pod.key} waits: {p.why}") for p in plan.deferred if p.pod.node_name == name]
    return facts


def _repair(node: NodeRecord, policy: Policy, plan: Plan) -> list[Fact]:
    """The repair ladder: its steps, the one under way or waiting and until when, what was tried (docs/repair.md)."""
    r = plan.repair
    state = r.in_repair.get(node.name)
    facts = []
    rule = next((x for x in policy.rules if state is not None and x.name == state.rule), None) \
        or next((x for x in policy.rules if x.repair and _holds(x, node)), None)
    if rule is not None and rule.repair:
        steps = ", then ".join(f"{s.describe()}" + (f" (wait {format_duration(s.wait)})" if s.wait else "")
                               for s in rule.repair)
        facts.append(Fact("repair", f"rule {rule.name}'s repair ladder: {steps}"))
    if state is not None:
        facts += [Fact("repair", f"tried: {t.describe()}") for t in state.history]
        what = f"{state.action} {state.service}" if state.service else str(state.action)
        facts.append(Fact("repair", f"step {state.step + 1} ({what}) asked at {state.requested:%Y-%m-%dT%H:%M:%SZ}, "
                                    f"ladder started {state.started:%Y-%m-%dT%H:%M:%SZ}"))
    facts += [Fact("repair", f"starts {s.describe()}") for s in r.starts if s.node == node.name]
    facts += [Fact("repair", f"ladder ends: {e.result}") for e in r.ends if e.node == node.name]
    facts += [Fact("repair", f"{w.step}: {w.why}", w.until) for w in r.waiting if w.node == node.name]
    if node.name in r.unreadable:
        facts.append(Fact("repair", f"its repair annotation is not a ladder and is removed: {r.unreadable[node.name]}"))
    return facts


def _dark(name: str, plan: Plan) -> list[Fact]:
    """Its kubelet silent: what the second witness says and what nodemedic does (planning/dark_nodes.py)."""
    d = plan.dark
    facts = []
    if name in d.nodes:
        facts.append(Fact("dark", f"{d.nodes[name].seen}: {d.nodes[name].why}"))
    facts += [Fact("dark", f"fence now on {f.evidence} evidence: {f.detail}") for f in d.fences if f.node == name]
    facts += [Fact("dark", f"delete NodeClaim {c.claim}: {c.detail}") for c in d.claim_deletes if c.node == name]
    facts += [Fact("dark", f"unfence: {u.why}") for u in d.unfences if u.node == name]
    return facts


def _holds(rule: TaintRule, node: NodeRecord) -> bool:
    c = node.condition(rule.condition_type)
    return c is not None and c.status == rule.condition_status


def _pdbs(pods: list[PodRecord], snapshot: Snapshot) -> list[Fact]:
    facts = []
    for b in snapshot.pdbs:
        if b.selector is None:
            continue
        here = [p.key for p in pods if p.namespace == b.namespace and matches_labels(b.selector, p.labels)]
        if here:
            facts.append(Fact("pdb", f"PodDisruptionBudget {b.namespace}/{b.name} allows {b.disruptions_allowed} "
                                     f"disruption(s) now and selects {len(here)} pod(s) here ({', '.join(here[:3])}"
                                     f"{', ...' if len(here) > 3 else ''})"))
    return facts


def _autoscaler(node: NodeRecord, pods: list[PodRecord]) -> Fact:
    keep = [p.key for p in pods
            if MIRROR_ANNOTATION not in p.annotations and not any(o.kind == "DaemonSet" for o in p.owners)]
    pool = node.labels.get(KARPENTER_NODEPOOL_LABEL)
    who = f"Karpenter (NodePool {pool})" if pool else "a node autoscaler"
    if not keep:
        return Fact("autoscaler", f"only DaemonSet and mirror pods run here: {who} may remove the node as empty")
    return Fact("autoscaler", f"{len(keep)} pod(s) keep {who} from removing the node as empty "
                              f"({', '.join(keep[:3])}{', ...' if len(keep) > 3 else ''})")
