"""Helpers for the tests of the whole chain with Karpenter: NodePools per test, and a watch on what disappears."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from kubernetes import client

from hack.kcp import karpenter
from tests.e2e.conftest import LocalCluster
from tests.e2e.real_node_harness import ready

POOL_LABEL = karpenter.NODEPOOL_LABEL


def node_pool(cluster: LocalCluster, name: str) -> str:
    """A test's own NodePool (4-CPU nodes, WhenEmpty after 5 s): its pods select it, so tests never share nodes."""
    assert cluster.owned is not None
    karpenter.apply_node_pools(cluster.owned.api(), (karpenter.NodePool(name=name),))
    return name


def pool_nodes(core: client.CoreV1Api, pool: str, *, terminating: bool = False) -> set[str]:
    """The pool's nodes; with `terminating`, also those being deleted (Karpenter marks a node deleted before it drains
    it, and its pods serve until they are evicted)."""
    return {n.metadata.name for n in core.list_node(label_selector=f"{POOL_LABEL}={pool}").items
            if terminating or n.metadata.deletion_timestamp is None}


def available(core: client.CoreV1Api, namespace: str, app: str, nodes: set[str]) -> int:
    """Pods of `app` that serve: Running, Ready, not terminating, on one of `nodes` (a deleted kwok node's pods stay
    listed as Running until the pod garbage collector comes)."""
    count = 0
    for p in core.list_namespaced_pod(namespace, label_selector=f"app={app}").items:
        if p.metadata.deletion_timestamp is None and ready(p) and p.spec.node_name in nodes:
            count += 1
    return count


@dataclass
class PoolWatch:
    """Polls one NodePool's nodes and the serving pods of guarded apps, five times a second, in a thread.

    Records every node that appeared or disappeared (with when), and the fewest serving pods each guarded app had:
    what "no node disappears that nodemedic did not drain" and "PDBs hold throughout" are checked against.
    """

    core: client.CoreV1Api
    pool: str
    guarded: dict[tuple[str, str], int]  # (namespace, app) -> the minimum its PDB promises
    added: dict[str, float] = field(default_factory=dict)
    removed: dict[str, float] = field(default_factory=dict)
    fewest: dict[tuple[str, str], int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> PoolWatch:
        self._seen = pool_nodes(self.core, self.pool)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> PoolWatch:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        return self

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            try:
                live = pool_nodes(self.core, self.pool)
                now = time.monotonic()
                for n in live - self._seen:
                    self.added.setdefault(n, now)
                for n in self._seen - live:
                    self.removed.setdefault(n, now)
                self._seen = live
                existing = pool_nodes(self.core, self.pool, terminating=True)
                for key in self.guarded:
                    count = available(self.core, *key, existing)
                    self.fewest[key] = min(self.fewest.get(key, count), count)
            except Exception as e:  # noqa: BLE001 - reported by the test, never lost in a thread
                self.errors.append(repr(e))

    def assert_held(self, *, may_remove: set[str]) -> None:
        assert not self.errors, self.errors
        unexpected = set(self.removed) - may_remove
        assert not unexpected, f"nodes disappeared that nodemedic did not drain or consolidate: {sorted(unexpected)}"
        for key, minimum in self.guarded.items():
            assert self.fewest.get(key, minimum) >= minimum, (
                f"{key[0]}/{key[1]} dropped to {self.fewest[key]} serving pods, below its PDB's {minimum}")
