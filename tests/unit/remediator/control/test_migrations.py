"""Migrations as the leader runs them (control/migrations.py): proposed, approved, run step by step on landed moves,
reverted when a step fails, against a fake API server and real caches and landings."""

from __future__ import annotations

import asyncio
import copy
import datetime as dt
import logging
from collections.abc import Callable
from typing import Any

from nodemedic_common.kube_errors import ApiError
from remediator.alerts.announcer import Alerts
from remediator.control.landings import Landings
from remediator.control.migrations import READ_EVERY, Migrations
from remediator.model.migration import Gain
from remediator.model.plan import PlannedEviction, Proposal
from remediator.planning.memory import PlannerMemory
from remediator.policy.model import Policy, StrategyConfig
from remediator.state.caches import ClusterCache, slim_pod
from remediator.strategies.balance_resource_mix.args import BalanceResourceMixArgs

LOG = logging.getLogger("test-migrations")
NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
MIGRATIONS = "/apis/nodemedic.io/v1alpha1/namespaces/ops/migrations"
DEFAULTS = Policy(strategies=(StrategyConfig("BalanceResourceMix", BalanceResourceMixArgs()),))  # approval required


def node(name: str, taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": "1", "labels": {"kubernetes.io/hostname": name}},
            "spec": {"taints": taints or []},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def pod(name: str, node_name: str, owner: str, *, phase: str = "Running", landing: str = "") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "shop", "uid": f"uid-{name}", "resourceVersion": "1",
                         "creationTimestamp": "2026-03-01T11:00:00Z",
                         "annotations": {"nodemedic.io/landing": landing} if landing else {},
                         "ownerReferences": [{"kind": "ReplicaSet", "name": owner, "uid": f"rs-{owner}",
                                              "controller": True}]},
            "spec": {"nodeName": node_name, "containers": [{"name": "c"}]}, "status": {"phase": phase}}


class Api:
    """Stores Migrations and Landings; answers evictions; records every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.migrations: dict[str, dict[str, Any]] = {}
        self.landings: dict[str, dict[str, Any]] = {}
        self.evicted: list[str] = []

    async def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> Any:
        self.calls.append((method, path))
        if path == MIGRATIONS and self.migrations is None:
            raise ApiError(404, method, path, '{"reason": "NotFound"}')
        if path == MIGRATIONS:
            if method == "POST":
                self.migrations[body["metadata"]["name"]] = copy.deepcopy(body)
                return body
            return {"items": copy.deepcopy(list(self.migrations.values()))}
        if path.startswith(MIGRATIONS + "/"):
            name = path.removeprefix(MIGRATIONS + "/").removesuffix("/status")
            if method == "DELETE":
                del self.migrations[name]
            else:
                self.migrations[name]["status"] = copy.deepcopy(body["status"])
            return {}
        if path.endswith("/landings") and method == "POST":
            self.landings[body["metadata"]["name"]] = body
        elif "/landings/" in path and method == "DELETE":
            self.landings.pop(path.rsplit("/", 1)[1], None)
        elif path.endswith("/eviction"):
            self.evicted.append(path.split("/")[-2])
        return {}


class World:
    def __init__(self, nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> None:
        self.api, self.now = Api(), NOW
        self.cache = ClusterCache(self.api, log=LOG, clock=lambda: self.now)  # type: ignore[arg-type]
        self.cache._reset_nodes(nodes)
        self.cache._reset_pods([slim_pod(p) for p in pods])
        self.counted: list[tuple[str, str]] = []
        self.memory = PlannerMemory()
        self.after_eviction: dict[str, Callable[[], None]] = {}  # evicted pod -> what its controller does then
        alerts = Alerts(self.api, None, identity="r1", log=LOG)  # type: ignore[arg-type]
        self.landings = Landings(kube=self.api, cache=self.cache, alerts=alerts,  # type: ignore[arg-type]
                                 count=lambda _: None, missed=lambda _: None, log=LOG, namespace="ops",
                                 clock=lambda: self.now, sleep=self.sleep)
        self.migrations = Migrations(kube=self.api, cache=self.cache, landings=self.landings,  # type: ignore[arg-type]
                                     alerts=alerts, log=LOG, namespace="ops", memory=self.memory,
                                     count=lambda e, o: self.counted.append((e, o)), may_act=lambda: True,
                                     monotonic=lambda: self.mono)
        self.mono = 0.0  # each cycle comes READ_EVERY after the last: each reads the Migrations

    async def sleep(self, seconds: float) -> None:
        self.now += dt.timedelta(seconds=seconds)
        for name in [n for n in self.after_eviction if n in self.api.evicted]:
            self.after_eviction.pop(name)()

    def replace(self, old: str, new: str, on: str, owner: str) -> None:
        """When `old` is evicted, its controller makes `new`, pinned by the open landing, bound to `on`."""
        def made() -> None:
            landing = next(iter(self.api.landings.values()))["spec"]["annotation"] if self.api.landings else ""
            self.cache._apply_pod("DELETED", pod(old, "x", owner))
            self.cache._apply_pod("ADDED", pod(new, on, owner, landing=landing))
        self.after_eviction[old] = made

    def cycle(self, proposals: tuple[Proposal, ...] = (), *, policy: Policy = DEFAULTS) -> None:
        self.mono += READ_EVERY

        async def run() -> None:
            await self.migrations.read(policy)
            await self.migrations.apply(list(proposals), policy, self.now, window_open=True)
            await asyncio.gather(*self.migrations.tasks)
        asyncio.run(run())

    def status(self) -> dict[str, Any]:
        (m,) = self.api.migrations.values()
        return m["status"]  # type: ignore[no-any-return]

    def decide(self, decision: str) -> None:
        (m,) = self.api.migrations.values()
        m["spec"]["decision"] = decision


def start() -> World:
    return World([node("n1"), node("n2"), node("n3")], [pod("a", "n1", "web"), pod("b", "n1", "api")])


def proposal(w: World) -> Proposal:
    return Proposal("BalanceResourceMix", (
        PlannedEviction(w.cache.pods["shop/a"], "BalanceResourceMix", "mix", destination="n2"),
        PlannedEviction(w.cache.pods["shop/b"], "BalanceResourceMix", "mix", destination="n3")),
        Gain("resource-mix deviation (points)", 160.0, 120.0))


def test_a_proposal_is_written_once_with_its_status_and_waits_for_a_person() -> None:
    w = start()
    w.cycle((proposal(w),))
    (m,) = w.api.migrations.values()
    assert [s["to"] for s in m["spec"]["steps"]] == ["n2", "n3"] and m["spec"]["decision"] == ""
    assert w.status()["phase"] == "Proposed" and "kubectl nodemedic approve migration-" in w.status()["message"]
    assert w.memory.open_migrations == {"BalanceResourceMix": m["metadata"]["name"]}
    assert w.counted == [("BalanceResourceMix", "proposed")]
    w.cycle((proposal(w),))
    assert len(w.api.migrations) == 1 and w.api.evicted == [], "one open migration per engine; nothing moves"


def test_an_approved_migration_runs_each_step_on_a_landed_move_and_succeeds() -> None:
    w = start()
    w.cycle((proposal(w),))
    w.decide("Approved")
    w.replace("a", "a2", "n2", "web")
    w.cycle()
    assert w.api.evicted == ["a"] and w.api.landings == {}, "evicted with its landing, closed once a2 was seen"
    assert [s["state"] for s in w.status()["steps"]] == ["Moving", "Pending"]
    w.replace("b", "b2", "n3", "api")
    w.cycle()  # step 1: a2 runs on n2 -> done; step 2 starts
    assert w.api.evicted == ["a", "b"] and [s["state"] for s in w.status()["steps"]] == ["Done", "Moving"]
    w.cycle()
    assert w.status()["phase"] == "Succeeded" and [s["replacement"] for s in w.status()["steps"]] == ["shop/a2",
                                                                                                        "shop/b2"]
    assert ("BalanceResourceMix", "succeeded") in w.counted and w.memory.open_migrations == {}
    reasons = [p for m, p in w.api.calls if p.endswith("/events")]
    assert len(reasons) >= 3, "proposed, running, succeeded"


def test_a_step_whose_target_is_tainted_mid_plan_fails_and_the_completed_step_is_moved_back() -> None:
    w = start()
    w.cycle((proposal(w),))
    w.decide("Approved")
    w.replace("a", "a2", "n2", "web")
    w.cycle()
    w.cache._apply_node("MODIFIED", node("n3", [{"key": "nodemedic.io/KernelDeadlock", "effect": "NoSchedule"}]))
    w.replace("a2", "a3", "n1", "web")
    w.cycle()  # step 1 done; step 2 cannot start: reverting, and the undo of step 1 starts
    assert w.api.evicted == ["a", "a2"], "b never moved; a's replacement moved back"
    assert w.status()["phase"] == "Reverting" and [s["state"] for s in w.status()["steps"]] == ["Undoing", "Failed"]
    assert "node n3 is tainted nodemedic.io/KernelDeadlock" in w.status()["steps"][1]["message"]
    w.cycle()
    assert w.status()["phase"] == "Reverted" and w.cache.pods["shop/a3"].node_name == "n1"
    assert ("BalanceResourceMix", "reverted") in w.counted


def test_a_rejected_or_expired_proposal_moves_nothing_and_is_deleted_after_keep_finished() -> None:
    w = start()
    w.cycle((proposal(w),))
    w.decide("Rejected")
    w.cycle()
    assert w.status()["phase"] == "Rejected" and w.api.evicted == []
    w.now += dt.timedelta(days=8)
    w.cycle()
    assert w.api.migrations == {}


def test_the_migrations_are_listed_at_most_every_few_seconds_and_the_leader_keeps_what_it_wrote_meanwhile() -> None:
    w = start()
    w.cycle((proposal(w),))
    w.decide("Approved")
    w.replace("a", "a2", "n2", "web")
    w.mono -= READ_EVERY  # the next cycle comes at once: no list, the decision not seen yet
    w.cycle()
    assert w.api.evicted == [] and [m for m, p in w.api.calls if p == MIGRATIONS].count("GET") == 1
    assert w.memory.open_migrations, "the proposal it wrote is open until a list says otherwise"
    w.cycle()
    assert w.api.evicted == ["a"], "the decision seen at the next list"


def test_a_policy_with_no_engine_waiting_for_a_person_lists_the_migrations_once_and_then_never() -> None:
    w = start()
    for _ in range(3):
        w.cycle(policy=Policy())
    assert [m for m, p in w.api.calls if p == MIGRATIONS] == ["GET"], "one look at start: none is open"


def test_when_the_migrations_cannot_be_listed_no_engine_proposes_and_a_policy_without_one_stops_asking() -> None:
    w = start()
    w.api.migrations = None  # type: ignore[assignment]  # the CRD is not installed: every list fails
    w.cycle((proposal(w),))
    assert w.memory.open_migrations == {"BalanceResourceMix": "(unread)"} and w.api.evicted == []
    w.cycle(policy=Policy())
    w.cycle(policy=Policy())
    assert w.memory.open_migrations == {}
    assert [m for m, p in w.api.calls if p == MIGRATIONS] == ["GET", "GET"], "then no more asking"
