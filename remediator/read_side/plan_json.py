"""/plan and `nodemedic-remediator plan --json`: a plan as the JSON document people and `kubectl nodemedic` read
(plan_answer.py reads it back)."""

from __future__ import annotations

from nodemedic_common.repair_contract import format_time
from remediator.model.plan import Plan, Protected, TaintChange


def plan_json(plan: Plan) -> dict[str, object]:
    repair, dark = plan.repair, plan.dark
    return {
        "taints": {"add": [_change(c) for c in plan.taints_add], "remove": [_change(c) for c in plan.taints_remove]},
        "evictions": [{"namespace": e.pod.namespace, "name": e.pod.name, "node": e.pod.node_name,
                       "strategy": e.strategy, "reason": e.reason} for e in plan.evictions],
        "protected": [_pod(p) for p in plan.protected],
        "deferred": [_pod(p) for p in plan.deferred],
        "held": [{"node": h.node, "key": h.taint.key, "effect": str(h.taint.effect), "rule": ",".join(h.rules),
                  "why": h.why} for h in plan.held],
        "breaker": {"open": plan.breaker_open, "taintedLimit": plan.tainted_limit},
        "zoneExposure": [{"namespace": z.namespace, "workload": z.workload, "perZone": dict(z.per_zone),
                          "surviving": round(z.surviving, 3), "best": round(z.best, 3),
                          "moves": [{"from": m.source, "to": m.target, "pods": m.pods} for m in z.moves]}
                         for z in plan.zone_exposure if z.exposed(plan.min_surviving_share)],
        "schedulerLoops": [{"namespace": loop.namespace, "owner": loop.owner, "node": loop.node,
                            "since": format_time(loop.since), "until": format_time(loop.until),
                            "note": loop.describe()} for loop in plan.scheduler_loops],
        **({"repair": repair.to_json()} if repair.in_repair or repair.waiting or repair.ends or repair.unreadable
           or repair.halted else {}),
        **({"darkNodes": dark.to_json()} if dark.nodes or dark.unfences else {}),
        **{report.json_key: report.to_json() for report in plan.reports.values()},  # each strategy's own
    }


def _change(c: TaintChange) -> dict[str, object]:
    return {"node": c.node, "key": c.taint.key, "value": c.taint.value, "effect": str(c.taint.effect),
            "rule": ",".join(c.rules), "cause": c.cause}


def _pod(p: Protected) -> dict[str, object]:
    return {"namespace": p.pod.namespace, "name": p.pod.name, "node": p.pod.node_name, "why": p.why}
