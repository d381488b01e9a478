"""Chaos 5: a condition flapping on 20 % of 500 kwok nodes for 10 minutes.

On 100 of 500 nodes the test flips KernelDeadlock between True and False, each spell lasting 2 to 8 seconds at
random (as an agent would write it: one status PATCH per change, lastTransitionTime in whole seconds). The rule asks
for `for: 5s` and `recoverAfter: 10s`, and the breaker allows 20 tainted nodes. Two pods run on every flapping node.
The history of every node is kept and checked against what the remediator did (its log and the audit log):
- a taint is added only after the condition has been True for `for` without a break, at most once per node
  unless the condition was clear for `recoverAfter` in between (never, here: no False spell lasts 10 s), and no
  taint is removed;
- the breaker holds: never more than 20 nodes tainted at once (the remediator's gauge polled every second, and the
  Node objects at the end), and every other node that qualified is held, not tainted, and announced once (not at
  every flap);
- evictions: only pods on tainted nodes, each pod once;
- the API write rate of the remediator (and of the flapping "agents") is reported from the audit log.
The duration can be shortened for a local run with NODEMEDIC_CHAOS_FLAP_SECONDS; CI runs the full 10 minutes.
"""

from __future__ import annotations

import datetime as dt
import os
import random
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from kubernetes import client

from tests.e2e.audit_log import audit_calls, evictions, remediator_calls
from tests.e2e.chaos import Figures, audited_cluster
from tests.e2e.remediator_harness import start_remediator
from tests.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.long_running]

NODES, FLAPPING, PODS_PER_NODE = 500, 100, 2
DURATION = float(os.environ.get("NODEMEDIC_CHAOS_FLAP_SECONDS", "600"))
SPELL = (2.0, 8.0)  # seconds a status lasts before it flips
FOR, RECOVER_AFTER, MAX_TAINTED = 5.0, 10.0, 20
TAINT = "nodemedic.io/kernel-deadlock"
POLICY = f"""
apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
rules:
- name: kernel-deadlock
  condition: {{type: KernelDeadlock, status: "True", for: {FOR:g}s}}
  taint: {{key: {TAINT}, value: "true", effect: NoSchedule}}
  evict: true
  recoverAfter: {RECOVER_AFTER:g}s
evictor:
  namespaces: {{include: [chaos]}}
limits: {{ownerCooldown: 0s, maxNoOfPodsToEvictPerNode: 50, maxNoOfPodsToEvictTotal: 100}}
safety: {{maxTaintedNodes: {MAX_TAINTED}, maxTaintedNodesPercent: 100}}
"""

Spell = tuple[float, float, str]  # (start, end, status), epoch seconds


class Flapper(threading.Thread):
    """Flips KernelDeadlock on `nodes` until `stop`, recording every spell (start, end, status) per node."""

    def __init__(self, core: client.CoreV1Api, nodes: list[str], rng: random.Random) -> None:
        super().__init__(daemon=True)
        self.core, self.nodes, self.rng = core, nodes, rng
        self.stop = threading.Event()
        self.spells: dict[str, list[Spell]] = {n: [] for n in nodes}
        self.writes = 0
        self.error: BaseException | None = None

    def write(self, node: str, status: str) -> float:
        now = time.time()
        stamp = dt.datetime.fromtimestamp(now, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.core.patch_node_status(node, {"status": {"conditions": [{
            "type": "KernelDeadlock", "status": status, "reason": "TaskHung" if status == "True" else "NoDeadlock",
            "message": "flapping", "lastHeartbeatTime": stamp, "lastTransitionTime": stamp}]}})
        self.writes += 1
        return now

    def run(self) -> None:
        try:
            due: dict[str, float] = {}
            current: dict[str, tuple[float, str]] = {}
            for n in self.nodes:  # start half True, half False, at staggered moments
                status = self.rng.choice(["True", "False"])
                current[n] = (self.write(n, status), status)
                due[n] = time.time() + self.rng.uniform(*SPELL)
            while not self.stop.is_set():
                node = min(due, key=due.__getitem__)
                wait = due[node] - time.time()
                if wait > 0 and self.stop.wait(wait):
                    break
                start, status = current[node]
                flipped = "False" if status == "True" else "True"
                at = self.write(node, flipped)
                self.spells[node].append((start, at, status))
                current[node] = (at, flipped)
                due[node] = at + self.rng.uniform(*SPELL)
            end = time.time()
            for n, (start, status) in current.items():
                self.spells[n].append((start, end, status))
        except BaseException as e:  # noqa: BLE001 - reported by the test, which fails on it
            self.error = e


def qualified_at(spells: list[Spell], t: float) -> bool:
    """True when, by time `t`, the condition had held True for FOR without a break (in the spell covering t)."""
    return any(status == "True" and start + FOR <= t and start <= t for start, end, status in spells
               if end >= t - 1.0)  # the watch sees a flip back to False up to ~1 s late


def most_at_once(adds: list[tuple[str, float]], removes: list[tuple[str, float]]) -> int:
    """The most nodes tainted at one time, replaying the remediator's taint and untaint log lines in time order."""
    tainted: set[str] = set()
    most = 0
    for _, kind, node in sorted([(t, 0, n) for n, t in removes] + [(t, 1, n) for n, t in adds]):
        if kind:
            tainted.add(node)
        else:
            tainted.discard(node)
        most = max(most, len(tainted))
    return most


def recovered_at(spells: list[Spell], t: float) -> bool:
    """True when, by time `t`, the condition had been False for RECOVER_AFTER without a break (in the spell covering
    t): the only time the remediator may remove its taint."""
    return any(status == "False" and start + RECOVER_AFTER <= t and start <= t for start, end, status in spells
               if end >= t - 1.0)  # the watch sees a flip back to True up to ~1 s late


def test_a_condition_flapping_on_a_fifth_of_500_nodes_stays_within_for_recover_after_and_the_breaker(
        tmp_path: Path, figures: Figures) -> None:
    rng = random.Random(19)
    with audited_cluster(NODES) as cluster:
        core, apps = client.CoreV1Api(cluster.api), client.AppsV1Api(cluster.api)
        nodes = sorted(n.metadata.name for n in core.list_node().items)
        flapping = sorted(rng.sample(nodes, FLAPPING))
        core.create_namespace({"metadata": {"name": "chaos"}})
        wait_until(lambda: core.list_namespaced_service_account("chaos").items, timeout=30, what="chaos SA")
        owner = apps.create_namespaced_replica_set("chaos", {  # owns the pods, selects none of them
            "metadata": {"name": "owner"},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"none": "x"}},
                     "template": {"metadata": {"labels": {"none": "x"}},
                                  "spec": {"containers": [{"name": "c", "image": "registry.invalid/c:1"}]}}}})
        pod_node = {}
        for node in flapping:
            for i in range(PODS_PER_NODE):
                name = f"{node}-p{i}"
                core.create_namespaced_pod("chaos", {
                    "metadata": {"name": name, "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                                                    "name": "owner", "uid": owner.metadata.uid}]},
                    "spec": {"nodeName": node, "containers": [{"name": "c", "image": "registry.invalid/c:1",
                                                               "resources": {"requests": {"cpu": "10m"}}}]}})
                pod_node[name] = node

        r = start_remediator(tmp_path, cluster.kubeconfig, POLICY, name="r1", lease_namespace="chaos")
        flapper = Flapper(core, flapping, rng)
        try:
            wait_until(lambda: r.metric("nodemedic_leader") == 1, timeout=60, what="r1 leads")
            t0 = time.time()
            flapper.start()
            most_tainted = 0.0
            while time.time() - t0 < DURATION:
                assert r.proc.poll() is None, f"the remediator exited:\n{r.log()[-3000:]}"
                assert flapper.error is None, flapper.error
                most_tainted = max(most_tainted, r.metric("nodemedic_tainted_nodes"))
                time.sleep(1.0)  # the sampling period of the breaker gauge, not a wait for something
            flapper.stop.set()
            flapper.join(30)
            t1 = time.time()
            assert flapper.error is None, flapper.error
            listed = core.list_node().items
            tainted_now = {n.metadata.name for n in listed if any(t.key == TAINT for t in n.spec.taints or [])}
            # Every taint of ours is recorded as ours, so a recovery can remove it: a cycle planned from a cache behind
            # the last write once took its own taint for a person's (remediator/actions/taintwriter.py).
            disowned = sorted(n.metadata.name for n in listed if n.metadata.name in tainted_now and TAINT not in
                              (n.metadata.annotations or {}).get("nodemedic.io/owned-taints", ""))
        finally:
            flapper.stop.set()
            r.stop()
        # The flapper stops before the remediator: each node keeps its last status until the remediator has stopped,
        # and a False spell that reaches recoverAfter in between is a recovery the remediator rightly acts on (CI saw
        # two such untaints in the last second of the window, counted as never recovered).
        stopped = time.time()
        for spells in flapper.spells.values():
            if spells:
                start, _, status = spells[-1]
                spells[-1] = (start, stopped, status)

        events = r.log_events()
        adds = [(e["node"], dt.datetime.fromisoformat(e["time"]).timestamp()) for e in events
                if e.get("event") == "NodemedicTainted"]
        removes = [(e["node"], dt.datetime.fromisoformat(e["time"]).timestamp()) for e in events
                   if e.get("event") == "NodemedicUntainted"]
        breaker_events = [e["node"] for e in events if e.get("event") == "NodemedicCircuitBreakerOpen"]
        held = set(breaker_events)
        premature = [(n, t) for n, t in adds if not qualified_at(flapper.spells[n], t)]
        unrecovered = [(n, t) for n, t in removes if not recovered_at(flapper.spells[n], t)]
        added = Counter(n for n, _ in adds)
        recoveries = {n: sum(1 for s, e, st in flapper.spells[n] if st == "False" and e - s >= RECOVER_AFTER)
                      for n in flapping}
        too_many = {n: c for n, c in added.items() if c > 1 + recoveries[n]}
        qualified = {n for n in flapping if any(st == "True" and e - s >= FOR for s, e, st in flapper.spells[n])}

        calls = audit_calls(cluster, since=t0)
        mine = remediator_calls(calls)
        granted = evictions(mine)
        evicted = [c.name for c in granted]
        from_untainted = sorted({pod_node[p] for p in evicted} - set(added))
        twice = sorted({p for p in evicted if evicted.count(p) > 1})
        seconds = t1 - t0
        writes = Counter(f"{c.verb} {c.resource}" for c in mine if c.verb not in ("get", "list", "watch"))

        figures("duration", round(seconds), "s")
        figures("condition changes written (the flapping agents)", flapper.writes)
        figures("flapping agents' write rate", flapper.writes / seconds, "/s")
        figures("nodes whose condition held True for `for` at least once", len(qualified))
        figures("taints added (allowed: at most one per node, 20 nodes at once)", len(adds))
        figures("taints added before `for` had passed", len(premature))
        figures("taint changes deferred (the node's condition flipped between the plan and the write)",
                sum(1 for e in events if str(e.get("msg", "")).startswith("taint change deferred")))
        figures("nodes tainted more often than recoverAfter allows", len(too_many))
        figures("taints removed / before recoverAfter was satisfied", f"{len(removes)} / {len(unrecovered)}")
        at_once = most_at_once(adds, removes)
        figures("most nodes tainted at once (gauge) / (the remediator's log) / at the end (Nodes)",
                f"{most_tainted:g} / {at_once} / {len(tainted_now)}")
        figures("nodes tainted at the end but not recorded as nodemedic's", len(disowned))
        figures("nodes held by the breaker / breaker Events", f"{len(held)} / {len(breaker_events)}")
        figures("evictions / pods evicted twice / from untainted nodes",
                f"{len(evicted)} / {len(twice)} / {len(from_untainted)}")
        figures("remediator write rate", sum(writes.values()) / seconds, "/s")
        figures("remediator writes", ", ".join(f"{k} {v}" for k, v in sorted(writes.items())))
        figures("remediator LISTs after start", sum(1 for c in mine if c.verb == "list"))

        assert premature == [] and too_many == {} and unrecovered == [], (premature, too_many, unrecovered)
        assert most_tainted <= MAX_TAINTED and len(tainted_now) <= MAX_TAINTED
        assert disowned == [], f"tainted but not recorded as nodemedic's, so never untainted: {disowned}"
        # The breaker counts nodes tainted at once. Replayed from the remediator's own log: a node that recovered
        # (a False spell past recoverAfter, which a flapper slowed by a loaded machine makes: CI saw 16) frees its slot
        # for another, so the nodes ever tainted may outnumber the breaker's limit, never those tainted at one time.
        assert at_once <= MAX_TAINTED, f"{at_once} nodes tainted at once by the remediator's log"
        assert len(adds) <= MAX_TAINTED + len(removes), (len(adds), len(removes))
        assert qualified - set(added) <= held, "a node that qualified was neither tainted nor held by the breaker"
        assert len(breaker_events) == len(held), "a held node flapping was announced again at each flap"
        assert twice == [] and from_untainted == [], (twice, from_untainted)
        assert set(evicted) == {p for p, n in pod_node.items() if n in added}
