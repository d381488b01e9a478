"""The plugin's answers worded for a person: plain lines and aligned tables (`-o json` prints the documents as they
come). Every text from the cluster is escaped on its way to the terminal (nodemedic_common/terminal_text.py)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nodemedic_common.terminal_text import printable
from remediator.kubectl.reach import Leader
from remediator.planning.owned_taints import parse_owned, strategy_owned
from remediator.policy.model import OWNED_TAINTS_ANNOTATION
from remediator.read_side.plan_answer import PlanAnswer
from remediator.read_side.plan_sections import DarkSection, RepairSection
from remediator.read_side.status_answer import StatusAnswer
from remediator.read_side.why_answer import WhyAnswer

# The conditions the kubelet itself reports; every other one came from an agent (nodemedic's or a peer's).
KUBELET_CONDITIONS = {"Ready", "MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable"}


Row = tuple[str, str, str, str]


def table(rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    if not rows:
        return []
    cells = [[printable(cell) for cell in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(cells[0]))]
    return [indent + "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in cells]


def status(leader: Leader, doc: StatusAnswer, plan: PlanAnswer, nodes: list[dict[str, Any]]) -> str:
    lines = [f"leader      {leader.pod} (Lease {leader.namespace}/{leader.lease}, renewed {leader.renewed or '?'})",
             f"policy      {doc.policy_file} (sha256 {doc.policy_sha256})",
             "mode        " + ("dry-run: plans, writes nothing" if doc.dry_run else "acting")]
    tainted = _tainted(nodes)
    limit = "?" if plan.breaker.tainted_limit is None else plan.breaker.tainted_limit
    rule_tainted = len({t.node for t in tainted if t.by_rule})
    held = plan.held
    lines.append(f"breaker     {'OPEN' if plan.breaker.open else 'closed'}: {rule_tainted} of at most {limit} "
                 f"node(s) tainted for a problem" + (f"; {len(held)} taint(s) held back" if held else ""))
    if tainted:
        lines.append("tainted nodes")
        lines += table([("NODE", "TAINT", "SINCE", "WHY"), *((t.node, t.taint, t.since, t.cause) for t in tainted)])
    else:
        lines.append("tainted nodes: none")
    repair = plan.repair or RepairSection()
    person = list(repair.needs_a_person)
    under = {w.node for w in repair.waiting} | {s.node for s in repair.starts}
    lines.append(f"repair      {len(under - set(person))} node(s) in repair"
                 + (f"; a person needed for {', '.join(person)}" if person else "")
                 + (f"; halted in {', '.join(sorted(group for group, _ in repair.halted))}" if repair.halted else ""))
    silent = (plan.dark or DarkSection()).silent
    if silent:
        seen = Counter(n.seen for n in silent)
        waiting = [n.node for n in silent if n.needs_evidence]
        lines.append("silent      " + ", ".join(f"{k} {v}" for k, v in sorted(seen.items()))
                     + (f"; evidence needed for {', '.join(waiting)} (kubectl nodemedic fence NODE --confirm)"
                        if waiting else ""))
    lines.append(f"last cycle  {len(plan.evictions)} eviction(s), {len(plan.protected)} protected, "
                 f"{len(plan.deferred)} deferred, {len(held)} held")
    rows = _actions(plan)
    if rows:
        lines += table([("WHAT", "POD/TAINT", "NODE", "WHY"), *rows])
    return "\n".join(printable(line) for line in lines)


@dataclass(frozen=True, order=True)
class _Tainted:
    node: str
    taint: str
    by_rule: bool  # a rule's taint (a problem), not a strategy's
    since: str
    cause: str


def _actions(plan: PlanAnswer) -> list[Row]:
    """(action, pod or taint, node, why) for the plan's evictions, protections, deferrals and holds."""
    rows = [("evict", f"{e.namespace}/{e.name}", e.node, f"{e.strategy}: {e.reason}") for e in plan.evictions]
    rows += [("protect", f"{p.namespace}/{p.name}", p.node, p.why) for p in plan.protected]
    rows += [("defer", f"{p.namespace}/{p.name}", p.node, p.why) for p in plan.deferred]
    rows += [("hold", h.key, h.node, h.why) for h in plan.held]
    return rows


def _repairs(repair: RepairSection) -> list[Row]:
    """(action, step, node, why) for the repair ladders' steps to start, ladders that end, and the ones that wait."""
    rows = [("repair", f"{s.action} {s.service}".strip(), s.node, f"step {s.step} of {s.rule}: {s.cause}")
            for s in repair.starts]
    rows += [("repaired" if e.repaired else "unrepaired", e.rule, e.node, e.result) for e in repair.ends]
    rows += [("repair-wait", w.step, w.node, w.why + (f" (until {w.until})" if w.until else ""))
             for w in repair.waiting]
    return rows


def _dark(dark: DarkSection) -> list[Row]:
    """(action, what, node, why) for silent nodes, the fences, NodeClaims deleted and fences ended."""
    rows = [("fence", f.what, f.node, f.detail) for f in dark.fences]
    rows += [("replace", c.what, c.node, c.detail) for c in dark.claim_deletes]
    rows += [("unfence", "out-of-service" if u.taint else "confirmation", u.node, u.why) for u in dark.unfences]
    rows += [("silent", n.seen, n.node, n.why) for n in dark.silent]
    return rows


def _tainted(nodes: list[dict[str, Any]]) -> list[_Tainted]:
    """Each taint nodemedic owns and the node carries."""
    out = []
    for n in nodes:
        meta, spec = _object(n.get("metadata")), _object(n.get("spec"))
        taints = spec.get("taints")
        present = {(t.get("key"), t.get("effect")) for t in taints if isinstance(t, dict)} \
            if isinstance(taints, list) else set()
        annotation = _object(meta.get("annotations")).get(OWNED_TAINTS_ANNOTATION)
        for o in parse_owned(annotation if isinstance(annotation, str) else None)[0]:
            if (o.taint.key, str(o.taint.effect)) in present:
                since = o.since.isoformat().replace("+00:00", "Z")
                out.append(_Tainted(str(meta.get("name")), f"{o.taint.key}:{o.taint.effect}", not strategy_owned(o),
                                    since, f"{o.cause} ({', '.join(o.rules)})"))
    return sorted(out)


def why(doc: WhyAnswer) -> str:
    head = f"why {doc.node}" + (f" (as of {doc.at})" if doc.at else "")
    rows = [(f.topic, f.sentence + (f" (changes in {f.changes_in}, at {f.changes_at})" if f.changes_in else ""))
            for f in doc.facts]
    return "\n".join([printable(head), *table(rows)])


def plan(doc: PlanAnswer) -> str:
    rows = [("taint", f"{c.key}:{c.effect}", c.node, c.cause) for c in doc.taints_add]
    rows += [("untaint", f"{c.key}:{c.effect}", c.node, c.cause) for c in doc.taints_remove]
    rows += _actions(doc)
    rows += [("exposed", f"{z.namespace}/{z.workload}", "-",
              f"{z.surviving:.0%} survive its worst zone's loss; {z.best:.0%} after "
              + "; ".join(f"{m.pods} from {m.source} to {m.target}" for m in z.moves))
             for z in doc.zone_exposure]
    rows += [("loop", f"{loop.namespace}/{loop.owner}", loop.node, loop.note) for loop in doc.scheduler_loops]
    rows += [("propose", f"{p.engine}: {len(p.moves)} move(s)", "-", f"{p.gain}; written as a Migration for a person "
              "(kubectl nodemedic migrations)") for p in doc.proposals]
    rows += _repairs(doc.repair or RepairSection())
    rows += _dark(doc.dark or DarkSection())
    if not rows:
        return "the plan is empty: nothing to taint, untaint or evict"
    return "\n".join(table([("ACTION", "WHAT", "NODE", "WHY"), *rows], indent=""))


def check(node: dict[str, Any], agent: dict[str, Any] | None) -> str:
    name = _object(node.get("metadata")).get("name")
    rows = [("TYPE", "STATUS", "SINCE", "BY", "REASON: MESSAGE")]
    conditions = _object(node.get("status")).get("conditions")
    for c in conditions if isinstance(conditions, list) else []:
        if not isinstance(c, dict):
            continue
        by = "kubelet" if c.get("type") in KUBELET_CONDITIONS else "agent"
        rows.append((str(c.get("type")), str(c.get("status")), str(c.get("lastTransitionTime", "")), by,
                     f"{c.get('reason', '')}: {c.get('message', '')}"))
    if agent is None:
        head = f"{name}: no nodemedic agent pod on this node"
    else:
        phase = _object(agent.get("status")).get("phase", "?")
        head = f"{name}: agent {_object(agent.get('metadata')).get('name')} is {phase}"
    return "\n".join([printable(head), *table(rows)])


def _object(value: object) -> dict[str, Any]:
    """A field of an API object that should be an object (anything else reads as empty)."""
    return value if isinstance(value, dict) else {}
