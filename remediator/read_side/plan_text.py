"""`nodemedic-remediator plan` without --json: one line per action, `SECTION key=value ...`, for a terminal (every
line's text from the cluster escaped: nodemedic_common/terminal_text.py)."""

from __future__ import annotations

from nodemedic_common.terminal_text import printable
from remediator.model.plan import Plan
from remediator.read_side.plan_rows import EvictionRow, HeldRow, PodRow, ProposalRow, TaintRow


def plan_lines(plan: Plan) -> list[str]:
    return [printable(line) for line in _lines(plan)]


def _lines(plan: Plan) -> list[str]:
    rows = [*(("taint", TaintRow.of(c).to_json()) for c in plan.taints_add),
            *(("untaint", TaintRow.of(c).to_json()) for c in plan.taints_remove),
            *(("evict", EvictionRow.of(e).to_json()) for e in plan.evictions),
            *(("protected", PodRow.of(p).to_json()) for p in plan.protected),
            *(("deferred", PodRow.of(p).to_json()) for p in plan.deferred),
            *(("held", HeldRow.of(h).to_json()) for h in plan.held)]
    lines = [f"{section:<10} " + "  ".join(f"{k}={v}" for k, v in row.items()) for section, row in rows]
    lines += [f"{'exposed':<10} {z.describe()}" for z in plan.zone_exposure if z.exposed(plan.min_surviving_share)]
    lines += [f"{'loop':<10} {loop.describe()}" for loop in plan.scheduler_loops]
    lines += [f"{'propose':<10} " + "  ".join(f"{k}={v}" for k, v in ProposalRow.of(p).to_json().items())
              for p in plan.proposals]
    lines += [f"{'repair':<10} node={start.node}  {start.describe()}" for start in plan.repair.starts]
    lines += [f"{'repaired' if end.repaired else 'unrepaired':<10} node={end.node}  rule={end.state.rule}  {end.result}"
              for end in plan.repair.ends]
    for wait in plan.repair.waiting:
        until = f"  until={wait.until:%Y-%m-%dT%H:%M:%SZ}" if wait.until else ""
        lines.append(f"{'repair-wait':<10} node={wait.node}  rule={wait.rule}  step={wait.step}  {wait.why}{until}")
    lines += [f"{'silent':<10} node={node.node}  seen={node.seen}  {node.why}"
              for node in sorted(plan.dark.nodes.values(), key=lambda n: n.node)]
    lines += [f"{'fence':<10} node={fence.node}  evidence={fence.evidence}  frees={','.join(fence.pods) or '-'}  "
              f"{fence.detail}" for fence in plan.dark.fences]
    lines += [f"{'replace':<10} node={claim.node}  nodeclaim={claim.claim}  frees={','.join(claim.pods) or '-'}  "
              f"{claim.detail}" for claim in plan.dark.claim_deletes]
    lines += [f"{'unfence':<10} node={unfence.node}  {unfence.why}" for unfence in plan.dark.unfences]
    lines.append(f"breaker: open={plan.breaker_open} taintedLimit={plan.tainted_limit}")
    return lines
