"""The rules: node conditions → the taints nodemedic owns, behind the safety rails (rails.py: pause, opt-out,
autoscaler, breaker). What nodemedic owns is read from the owned-taints annotation (owned_taints.py).

Pure: time is `snapshot.now`; the only state is the `clear_since` map the caller keeps between cycles (when a
condition we can no longer see went away).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field

from nodemedic_common.durations import format_duration, whole_seconds
from remediator.model.plan import ConditionSeen, Held, HoldReason, TaintChange
from remediator.model.records import NodeRecord, Taint
from remediator.planning.owned_taints import OwnedTaint, parse_owned, strategy_owned
from remediator.planning.rails import safety_hold, tainted_limit
from remediator.policy.model import OWNED_TAINTS_ANNOTATION, Policy
from remediator.policy.rules import TaintRule
from remediator.state.snapshot import Snapshot

Identity = tuple[str, str]


@dataclass
class TaintPlan:
    adds: list[TaintChange] = field(default_factory=list)
    removes: list[TaintChange] = field(default_factory=list)
    held: list[Held] = field(default_factory=list)
    breaker_open: bool = False
    tainted_limit: int = 0
    next_check: dt.datetime | None = None
    owned_after: dict[str, list[OwnedTaint]] = field(default_factory=dict)
    evict_taints: dict[str, list[Taint]] = field(default_factory=dict)


@dataclass
class _Want:
    """A taint the active rules want on one node."""

    taint: Taint
    rules: list[str]
    causes: list[str]
    oldest: dt.datetime | None  # earliest held_since among its active conditions
    premise: list[ConditionSeen] = field(default_factory=list)  # the conditions behind it, as read


def _earlier(a: dt.datetime | None, b: dt.datetime | None) -> dt.datetime | None:
    return b if a is None else a if b is None else min(a, b)


def plan_taints(snapshot: Snapshot, policy: Policy, clear_since: dict[tuple[str, str], dt.datetime]) -> TaintPlan:
    now = snapshot.now
    plan = TaintPlan()
    rules_by_taint: dict[Identity, list[TaintRule]] = {}
    for r in policy.rules:
        rules_by_taint.setdefault(r.taint.identity(), []).append(r)
    consulted: set[tuple[str, str]] = set()
    wants_by_node: dict[str, list[_Want]] = {}
    matching: dict[str, set[str]] = {}  # node -> rules whose condition is at the rule's status (active or pending)

    def due(t: dt.datetime) -> None:
        plan.next_check = t if plan.next_check is None else min(plan.next_check, t)

    for name in sorted(snapshot.nodes):
        node = snapshot.nodes[name]
        present = {t.identity() for t in node.taints}
        owned = {o.taint.identity(): o for o in parse_owned(node.annotations.get(OWNED_TAINTS_ANNOTATION))[0]
                 if o.taint.identity() in present}
        wants: dict[Identity, _Want] = {}
        matching[name] = set()
        for r in policy.rules:
            c = node.condition(r.condition_type)
            if c is None or c.status != r.condition_status:
                continue
            matching[name].add(r.name)
            clear_since.pop((name, r.name), None)
            held_since = c.held_since()
            if held_since is None:
                if r.for_ > dt.timedelta(0):
                    continue  # cannot prove the condition has lasted `for`
                cause = f"{c.type}={c.status} (no transition time)"
            elif now - held_since < r.for_:
                due(held_since + r.for_)
                continue
            else:
                cause = f"{c.type}={c.status} for {format_duration(whole_seconds(now - held_since))}"
            w = wants.setdefault(r.taint.identity(), _Want(r.taint, [], [], held_since))
            w.rules.append(r.name)
            w.causes.append(cause)
            if (seen := ConditionSeen.of(c.type, c)) not in w.premise:
                w.premise.append(seen)
            w.oldest = _earlier(w.oldest, held_since)

        kept: list[OwnedTaint] = []
        for ident, o in sorted(owned.items()):
            if strategy_owned(o):
                kept.append(o)  # a strategy's taint (consolidation): that strategy decides when it goes
                continue
            if ident in wants:
                w = wants[ident]
                if o.taint.value == w.taint.value:
                    kept.append(o)
                    continue
                # The policy now gives our taint another value: swap it in the same patch. Not a new taint on a
                # new node, so no admission (the breaker must never strip a taint it is only renaming).
                plan.removes.append(TaintChange(name, o.taint, o.rules, f"value changed to {w.taint.value!r}",
                                                tuple(w.premise)))  # both halves of the swap, or neither
                change = TaintChange(name, w.taint, tuple(w.rules), "; ".join(w.causes), tuple(w.premise))
                plan.adds.append(change)
                kept.append(OwnedTaint(w.taint, change.rules, change.cause, now))
                continue
            release = _release(node, o, rules_by_taint.get(ident, []), matching=matching[name],
                               clear_since=clear_since, consulted=consulted, now=now, due=due)
            if release is None:
                kept.append(o)
            else:
                plan.removes.append(TaintChange(name, o.taint, *release))
        plan.owned_after[name] = kept
        # A desired taint already on the node is either ours (kept above) or a human's: add nothing either way.
        wants_by_node[name] = [w for ident, w in sorted(wants.items()) if ident not in present]

    for key in [k for k in clear_since if k not in consulted]:
        del clear_since[key]  # no owned taint is waiting on this timer any more
    _admit(snapshot, policy, plan, wants_by_node)
    for name in sorted(snapshot.nodes):
        evict_rules = {r.name for r in policy.rules if r.evict and r.name in matching[name]}
        plan.evict_taints[name] = [o.taint for o in plan.owned_after[name]
                                   if any(r.name in evict_rules for r in rules_by_taint.get(o.taint.identity(), []))]
        if not plan.owned_after[name]:
            del plan.owned_after[name]
        if not plan.evict_taints[name]:
            del plan.evict_taints[name]
    return plan


def _release(node: NodeRecord, owned: OwnedTaint, rules: list[TaintRule], *, matching: set[str],
             clear_since: dict[tuple[str, str], dt.datetime], consulted: set[tuple[str, str]], now: dt.datetime,
             due: Callable[[dt.datetime], None]) -> tuple[tuple[str, ...], str, tuple[ConditionSeen, ...]] | None:
    """(rules, cause, premise) when every rule behind an owned taint has been clear for its recoverAfter, else None.

    Every rule's clock is read (and started) even when an earlier one already keeps the taint, so a timer
    is never restarted just because another rule was busy.
    """
    if not rules:
        return owned.rules, "rule removed from policy", ()
    causes = []
    premise: list[ConditionSeen] = []
    waiting = False
    for r in rules:
        if r.name in matching:
            waiting = True  # still (or again) at the rule's status: keep the taint, never flap
            continue
        c = node.condition(r.condition_type)
        since = c.held_since() if c is not None else None
        if since is None:
            since = clear_since.setdefault((node.name, r.name), now)
            consulted.add((node.name, r.name))
        if now - since < r.recover_after:
            due(since + r.recover_after)
            waiting = True
        state = f"{c.type}={c.status}" if c is not None else f"{r.condition_type} absent"
        causes.append(f"{state} for {format_duration(whole_seconds(now - since))}")
        if (seen := ConditionSeen.of(r.condition_type, c)) not in premise:
            premise.append(seen)
    if waiting:
        return None
    return tuple(r.name for r in rules), "; ".join(causes), tuple(premise)


def _admit(snapshot: Snapshot, policy: Policy, plan: TaintPlan, wants_by_node: dict[str, list[_Want]]) -> None:
    """Turn wanted taints into adds or holds: safety rails first, then the tainted-node circuit breaker."""
    limit = tainted_limit(policy.safety, len(snapshot.nodes))
    plan.tainted_limit = limit
    # The breaker counts nodes with a problem; a node being consolidated is not one (HNU has its own limit).
    tainted = {n for n, owned in plan.owned_after.items() if any(not strategy_owned(o) for o in owned)}
    # A node this plan untaints keeps its place until the node shows the untaint: the write may be deferred (its
    # condition came back before it) or fail, and the place given out meanwhile would put the limit + 1 nodes out of
    # rotation (CI saw 21 of 20). The next cycle, woken by that node's update, gives the place out.
    untainting = {c.node for c in plan.removes} - tainted
    newcomers: list[tuple[dt.datetime | None, str]] = []
    for name, wants in wants_by_node.items():
        if not wants:
            continue
        hold = safety_hold(snapshot.nodes[name], policy.safety)
        if hold is not None:
            plan.held += [Held(name, w.taint, tuple(w.rules), hold.reason, hold.why) for w in wants]
        elif name in tainted:
            _add(plan, name, wants, snapshot.now)  # one more taint on a node already out of rotation costs nothing
        else:
            oldest = None
            for w in wants:
                oldest = _earlier(oldest, w.oldest)
            newcomers.append((oldest, name))
    # Oldest problem first; a problem without a transition time cannot prove its age, so it goes last.
    newcomers.sort(key=lambda x: (x[0] is None, x[0] or snapshot.now, x[1]))
    count = len(tainted) + len(untainting)
    waiting = 0  # newcomers that the untaints, once landed, make room for
    for _, name in newcomers:
        if count < limit:
            count += 1
            _add(plan, name, wants_by_node[name], snapshot.now)
        elif count - len(untainting) + waiting < limit:
            waiting += 1
            plan.held += [Held(name, w.taint, tuple(w.rules), HoldReason.UNTAINT_PENDING,
                               f"waits for the untaint of {len(untainting)} node(s) to land: {count}/{limit} "
                               "nodes tainted until then") for w in wants_by_node[name]]
        else:
            plan.breaker_open = True
            plan.held += [Held(name, w.taint, tuple(w.rules), HoldReason.CIRCUIT_BREAKER,
                               f"circuit breaker: {count}/{limit} nodes tainted") for w in wants_by_node[name]]
    plan.adds.sort(key=lambda c: (c.node, c.taint.key, str(c.taint.effect)))
    plan.held.sort(key=lambda h: (h.node, h.taint.key, str(h.taint.effect)))


def _add(plan: TaintPlan, node: str, wants: list[_Want], now: dt.datetime) -> None:
    for w in wants:
        change = TaintChange(node, w.taint, tuple(w.rules), "; ".join(w.causes), tuple(w.premise))
        plan.adds.append(change)
        plan.owned_after.setdefault(node, []).append(OwnedTaint(w.taint, change.rules, change.cause, now))
