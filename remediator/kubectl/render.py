"""The plugin's answers worded for a person: plain lines and aligned tables (`-o json` prints the documents as they
come)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from remediator.kubectl.reach import Leader
from remediator.planning.owned_taints import parse_owned, strategy_owned
from remediator.policy.model import OWNED_TAINTS_ANNOTATION

# The conditions the kubelet itself reports; every other one came from an agent (nodemedic's or a peer's).
KUBELET_CONDITIONS = {"Ready", "MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable"}


def table(rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [indent + "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def status(leader: Leader, doc: dict[str, Any], plan: dict[str, Any], nodes: list[dict[str, Any]]) -> str:
    policy = doc.get("policy") or {}
    lines = [f"leader      {leader.pod} (Lease {leader.namespace}/{leader.lease}, renewed {leader.renewed or '?'})",
             f"policy      {policy.get('file', '?')} (sha256 {policy.get('sha256', '?')})",
             "mode        " + ("dry-run: plans, writes nothing" if doc.get("dryRun") else "acting")]
    tainted = _tainted(nodes)
    breaker = plan.get("breaker") or {}
    limit = breaker.get("taintedLimit", "?")
    rule_tainted = len({t.node for t in tainted if t.by_rule})
    held = plan.get("held") or []
    lines.append(f"breaker     {'OPEN' if breaker.get('open') else 'closed'}: {rule_tainted} of at most {limit} "
                 f"node(s) tainted for a problem" + (f"; {len(held)} taint(s) held back" if held else ""))
    if tainted:
        lines.append("tainted nodes")
        lines += table([("NODE", "TAINT", "SINCE", "WHY"), *((t.node, t.taint, t.since, t.cause) for t in tainted)])
    else:
        lines.append("tainted nodes: none")
    repair = plan.get("repair") or {}
    person = [str(n) for n in repair.get("needsAPerson") or []]
    under = {str(w.get("node")) for w in repair.get("waiting") or []} | {str(s.get("node")) for s in
                                                                        repair.get("start") or []}
    halted = sorted(str(g) for g in repair.get("halted") or {})
    lines.append(f"repair      {len(under - set(person))} node(s) in repair"
                 + (f"; a person needed for {', '.join(person)}" if person else "")
                 + (f"; halted in {', '.join(halted)}" if halted else ""))
    silent = (plan.get("darkNodes") or {}).get("nodes") or []
    if silent:
        seen = Counter(str(n.get("seen")) for n in silent)
        waiting = [str(n.get("node")) for n in silent if n.get("needsEvidence")]
        lines.append("silent      " + ", ".join(f"{k} {v}" for k, v in sorted(seen.items()))
                     + (f"; evidence needed for {', '.join(waiting)} (kubectl nodemedic fence NODE --confirm)"
                        if waiting else ""))
    evictions, protected, deferred = (plan.get(k) or [] for k in ("evictions", "protected", "deferred"))
    lines.append(f"last cycle  {len(evictions)} eviction(s), {len(protected)} protected, {len(deferred)} deferred, "
                 f"{len(held)} held")
    rows = _actions(plan)
    if rows:
        lines += table([("WHAT", "POD/TAINT", "NODE", "WHY"), *rows])
    return "\n".join(lines)


@dataclass(frozen=True, order=True)
class _Tainted:
    node: str
    taint: str
    by_rule: bool  # a rule's taint (a problem), not a strategy's
    since: str
    cause: str


def _actions(plan: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(action, pod or taint, node, why) for the plan's evictions, protections, deferrals and holds."""
    rows = [("evict", f"{e['namespace']}/{e['name']}", e["node"], f"{e['strategy']}: {e['reason']}")
            for e in plan.get("evictions") or []]
    rows += [("protect", f"{p['namespace']}/{p['name']}", p["node"], p["why"]) for p in plan.get("protected") or []]
    rows += [("defer", f"{p['namespace']}/{p['name']}", p["node"], p["why"]) for p in plan.get("deferred") or []]
    rows += [("hold", h["key"], h["node"], h["why"]) for h in plan.get("held") or []]
    return rows


def _repairs(repair: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(action, step, node, why) for the repair ladders' steps to start, ladders that end, and the ones that wait."""
    rows = [("repair", f"{s.get('action')} {s.get('service', '')}".strip(), str(s.get("node")),
             f"step {s.get('step')} of {s.get('rule')}: {s.get('cause')}") for s in repair.get("start") or []]
    rows += [("repaired" if e.get("repaired") else "unrepaired", str(e.get("rule")), str(e.get("node")),
              str(e.get("result"))) for e in repair.get("end") or []]
    rows += [("repair-wait", str(w.get("step")), str(w.get("node")),
              str(w.get("why")) + (f" (until {w['until']})" if w.get("until") else ""))
             for w in repair.get("waiting") or []]
    return rows


def _dark(dark: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(action, what, node, why) for silent nodes, the fences, NodeClaims deleted and fences ended."""
    rows = [("fence", str(f.get("evidence")), str(f.get("node")), str(f.get("detail")))
            for f in dark.get("fence") or []]
    rows += [("replace", str(c.get("nodeClaim")), str(c.get("node")), str(c.get("detail")))
             for c in dark.get("deleteNodeClaim") or []]
    rows += [("unfence", "out-of-service" if u.get("taint") else "confirmation", str(u.get("node")), str(u.get("why")))
             for u in dark.get("unfence") or []]
    rows += [("silent", str(n.get("seen")), str(n.get("node")), str(n.get("why"))) for n in dark.get("nodes") or []]
    return rows


def _tainted(nodes: list[dict[str, Any]]) -> list[_Tainted]:
    """Each taint nodemedic owns and the node carries."""
    out = []
    for n in nodes:
        meta = n.get("metadata") or {}
        present = {(t.get("key"), t.get("effect")) for t in (n.get("spec") or {}).get("taints") or []}
        for o in parse_owned((meta.get("annotations") or {}).get(OWNED_TAINTS_ANNOTATION))[0]:
            if (o.taint.key, str(o.taint.effect)) in present:
                since = o.since.isoformat().replace("+00:00", "Z")
                out.append(_Tainted(str(meta.get("name")), f"{o.taint.key}:{o.taint.effect}", not strategy_owned(o),
                                    since, f"{o.cause} ({', '.join(o.rules)})"))
    return sorted(out)


def why(doc: dict[str, Any]) -> str:
    lines = [f"why {doc.get('node')}" + (f" (as of {doc['at']})" if doc.get("at") else "")]
    rows = []
    for f in doc.get("facts") or []:
        when = f" (changes in {f['changesIn']}, at {f['changesAt']})" if f.get("changesIn") else ""
        rows.append((str(f.get("topic", "")), f"{f.get('sentence', '')}{when}"))
    return "\n".join(lines + table(rows))


def plan(doc: dict[str, Any]) -> str:
    taints = doc.get("taints") or {}
    rows = [("taint", f"{c['key']}:{c['effect']}", c["node"], c["cause"]) for c in taints.get("add") or []]
    rows += [("untaint", f"{c['key']}:{c['effect']}", c["node"], c["cause"]) for c in taints.get("remove") or []]
    rows += _actions(doc)
    rows += [("exposed", f"{z['namespace']}/{z['workload']}", "-",
              f"{z['surviving']:.0%} survive its worst zone's loss; {z['best']:.0%} after "
              + "; ".join(f"{m['pods']} from {m['from']} to {m['to']}" for m in z["moves"]))
             for z in doc.get("zoneExposure") or []]
    rows += [("loop", f"{loop['namespace']}/{loop['owner']}", loop["node"], loop["note"])
             for loop in doc.get("schedulerLoops") or []]
    rows += _repairs(doc.get("repair") or {})
    rows += _dark(doc.get("darkNodes") or {})
    if not rows:
        return "the plan is empty: nothing to taint, untaint or evict"
    return "\n".join(table([("ACTION", "WHAT", "NODE", "WHY"), *rows], indent=""))


def check(node: dict[str, Any], agent: dict[str, Any] | None) -> str:
    name = (node.get("metadata") or {}).get("name")
    rows = [("TYPE", "STATUS", "SINCE", "BY", "REASON: MESSAGE")]
    for c in (node.get("status") or {}).get("conditions") or []:
        by = "kubelet" if c.get("type") in KUBELET_CONDITIONS else "agent"
        rows.append((str(c.get("type")), str(c.get("status")), str(c.get("lastTransitionTime", "")), by,
                     f"{c.get('reason', '')}: {c.get('message', '')}"))
    if agent is None:
        head = f"{name}: no nodemedic agent pod on this node"
    else:
        phase = (agent.get("status") or {}).get("phase", "?")
        head = f"{name}: agent {(agent.get('metadata') or {}).get('name')} is {phase}"
    return "\n".join([head, *table(rows)])
