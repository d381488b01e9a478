"""Small hand-built clusters for the deschedule strategies' tables: nodes, pods, a snapshot, and one planning cycle
through the real gate (DefaultEvictor, limits, node fit) with a chosen strategy."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from remediator.control.planner import PlannerMemory, make_plan
from remediator.model.plan import Plan
from remediator.model.records import Condition, NodeRecord, OwnerRef, PodRecord
from remediator.policy.default_evictor import EvictorArgs
from remediator.policy.limits import Limits
from remediator.policy.model import Policy, StrategyConfig
from remediator.state.snapshot import Snapshot

NOW = dt.datetime(2024, 5, 1, 12, 0, 0, tzinfo=dt.UTC)
GiB = 1 << 30


def node(name: str, *, ready: bool = True, unschedulable: bool = False, cpu: int = 4000, pods: int = 110,
         labels: dict[str, str] | None = None) -> NodeRecord:
    return NodeRecord(name=name, labels=labels or {}, unschedulable=unschedulable,
                      conditions=(Condition("Ready", "True" if ready else "False"),),
                      allocatable={"cpu": cpu, "memory": 16 * GiB, "pods": pods})


def pod(name: str, node_name: str = "n1", *, owner: str = "ReplicaSet", owner_name: str = "", cpu: int = 100,
        age: dt.timedelta = dt.timedelta(days=2), namespace: str = "default", **kw: object) -> PodRecord:
    owned = owner_name or f"{name}-owner"
    owners = (OwnerRef(owner, owned, f"uid-{owned}", controller=True),) if owner else ()
    fields: dict[str, object] = {"phase": "Running", "requests": {"cpu": cpu, "memory": 64 << 20},
                                 "created": NOW - age, "start_time": NOW - age}
    fields.update(kw)
    return PodRecord(namespace=namespace, name=name, uid=f"uid-{namespace}-{name}", node_name=node_name,
                     owners=owners, **fields)  # type: ignore[arg-type]


def snapshot(nodes: Iterable[NodeRecord], pods: Iterable[PodRecord]) -> Snapshot:
    by_node: dict[str, list[PodRecord]] = {}
    by_owner: dict[str, list[PodRecord]] = {}
    for p in pods:
        by_node.setdefault(p.node_name, []).append(p)
        for o in p.owners:
            by_owner.setdefault(o.uid, []).append(p)
    return Snapshot(now=NOW, nodes={n.name: n for n in nodes}, pods_by_node=by_node, pods_by_owner=by_owner)


def cycle(s: Snapshot, name: str, args: object, *, evictor: EvictorArgs | None = None,
          limits: Limits | None = None) -> Plan:
    """One planning cycle with only this strategy, no rules, no owner cool-down."""
    policy = Policy(evictor=evictor or EvictorArgs(), strategies=(StrategyConfig(name, args),),
                    limits=limits or Limits(owner_cooldown=dt.timedelta(0)))
    return make_plan(s, policy, PlannerMemory())


def evicted(plan: Plan) -> list[str]:
    return [e.pod.name for e in plan.evictions]
