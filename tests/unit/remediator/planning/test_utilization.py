"""Utilization: by requests (the gate's books), by metrics.k8s.io (the node's measured cpu and memory moved by the
cycle's planned moves, a pod's measured usage or its requests), or by a Prometheus query (one whole percent per node,
no pod); an unreported node is unknown (None). The gate is a small fake holding only the view fields read here."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping, Sequence

from remediator.model.plan import PlannedEviction
from remediator.model.records import NodeRecord, PodRecord
from remediator.planning.utilization import Utilization, describe_source
from remediator.policy.measured_usage import KUBERNETES_METRICS, METRIC_RESOURCE, PROMETHEUS, MetricsUtilization
from remediator.scheduling.nodefit import PODS
from remediator.state.snapshot import MeasuredUsage, Snapshot

K8S = MetricsUtilization(KUBERNETES_METRICS)
PROM = MetricsUtilization(PROMETHEUS, query="node_cpu")
ALLOC = {"cpu": 4000, "memory": 1000, PODS: 10}


@dataclasses.dataclass
class View:
    books: dict[str, dict[str, int]]
    leaving: Sequence[tuple[PodRecord, str | None]] = ()
    planned: Sequence[PlannedEviction] = ()
    moved_to: Mapping[str, str | None] = dataclasses.field(default_factory=dict)

    def usage(self, node: str) -> dict[str, int]:
        return dict(self.books.get(node, {}))


@dataclasses.dataclass
class FakeGate:
    view: View


def _pod(name: str, node: str, *, cpu: int = 100, memory: int = 10) -> PodRecord:
    return PodRecord(namespace="ns", name=name, uid=f"uid-{name}", node_name=node, phase="Running",
                     requests={"cpu": cpu, "memory": memory})


def _snapshot(measured: MeasuredUsage | None = None) -> Snapshot:
    nodes = {n: NodeRecord(n, allocatable=dict(ALLOC)) for n in ("n1", "n2", "n3")}
    return Snapshot(now=dt.datetime(2026, 1, 1, tzinfo=dt.UTC), nodes=nodes, pods_by_node={}, pods_by_owner={},
                    measured=measured or MeasuredUsage())


BOOKS = {"n1": {"cpu": 2000, "memory": 500, PODS: 5}, "n2": {"cpu": 400, PODS: 1}}


def _util(metrics: MetricsUtilization | None, view: View | None = None, measured: MeasuredUsage | None = None,
          resources: tuple[str, ...] = ("cpu", "memory", PODS)) -> Utilization:
    return Utilization(_snapshot(measured), FakeGate(view or View(BOOKS)), metrics, resources)  # type: ignore[arg-type]


def test_by_requests_reads_the_gates_books_and_a_pods_requests() -> None:
    u = _util(None)
    assert (u.by_requests, u.per_pod) == (True, True)
    assert u.used("n1") == BOOKS["n1"]
    assert u.percentages("n1") == {"cpu": 50.0, "memory": 50.0, PODS: 50.0}
    assert u.pod(_pod("p", "n1", cpu=7)) == {"cpu": 7, "memory": 10}
    assert u.with_pod("n2", _pod("p", "n1"), {"cpu": 1000, PODS: 2}) == {"cpu": 25.0, "memory": 0.0, PODS: 20.0}


def test_measured_usage_is_the_nodes_cpu_and_memory_with_the_pods_count_from_the_books() -> None:
    measured = MeasuredUsage(nodes={"n1": {"cpu": 1000, "memory": 250, "ephemeral": 9}})
    u = _util(K8S, measured=measured)
    assert (u.by_requests, u.per_pod) == (False, True)
    assert u.used("n1") == {"cpu": 1000, "memory": 250, PODS: 5}
    assert u.percentages("n1") == {"cpu": 25.0, "memory": 25.0, PODS: 50.0}
    assert (u.used("n2"), u.percentages("n2")) == (None, None)  # not reported: unknown, never zero


def test_planned_moves_and_evictions_under_way_shift_the_measured_usage_by_the_pods_own() -> None:
    measured = MeasuredUsage(nodes={"n1": {"cpu": 1000, "memory": 250}, "n2": {"cpu": 200, "memory": 50}},
                             pods={"ns/a": {"cpu": 300, "memory": 30}})
    a, b = _pod("a", "n1"), _pod("b", "n1", cpu=50, memory=5)  # b has no measured usage: its requests
    view = View(BOOKS, leaving=[(a, "n2")], planned=[PlannedEviction(b, "S", "r")], moved_to={b.uid: None})
    u = _util(K8S, view, measured)
    assert u.used("n1") == {"cpu": 650, "memory": 215, PODS: 5}
    assert u.used("n2") == {"cpu": 500, "memory": 80, PODS: 1}


def test_a_move_the_strategy_books_shifts_measured_usage_but_not_with_requests() -> None:
    measured = MeasuredUsage(nodes={"n1": {"cpu": 1000, "memory": 250}, "n2": {"cpu": 0, "memory": 0}})
    u = _util(K8S, measured=measured)
    u.moved(_pod("p", "n1", cpu=400), "n1", "n2")
    assert (u.used("n1"), u.used("n2")) == ({"cpu": 600, "memory": 240, PODS: 5}, {"cpu": 400, "memory": 10, PODS: 1})
    by_requests = _util(None)
    by_requests.moved(_pod("p", "n1", cpu=400), "n1", "n2")
    assert by_requests.used("n1") == BOOKS["n1"]  # the cycle books requests itself


def test_with_pod_adds_the_pods_measured_usage_or_its_requests_and_takes_pods_from_node_fit() -> None:
    measured = MeasuredUsage(nodes={"n2": {"cpu": 400, "memory": 100}}, pods={"ns/m": {"cpu": 800, "memory": 0}})
    u = _util(K8S, measured=measured)
    assert u.pod(_pod("m", "n1")) == {"cpu": 800, "memory": 0}
    assert u.pod(_pod("x", "n1")) is None
    assert u.with_pod("n2", _pod("m", "n1"), {PODS: 2}) == {"cpu": 30.0, "memory": 10.0, PODS: 20.0}
    assert u.with_pod("n2", _pod("x", "n1", cpu=400), {PODS: 2}) == {"cpu": 20.0, "memory": 11.0, PODS: 20.0}
    assert u.with_pod("n3", _pod("m", "n1"), {PODS: 1}) is None  # the destination is unknown


def test_a_prometheus_query_gives_whole_percent_per_node_and_nothing_per_pod() -> None:
    measured = MeasuredUsage(scores={"node_cpu": {"n1": 0.4567}, "other": {"n2": 0.9}})
    u = _util(PROM, measured=measured)
    assert (u.by_requests, u.per_pod) == (False, False)
    assert u.percentages("n1") == {METRIC_RESOURCE: 45.0}
    assert u.percentages("n2") is None
    assert u.used("n1") is None
    assert u.pod(_pod("p", "n1")) == {}
    assert u.with_pod("n1", _pod("p", "n2"), {PODS: 9}) == {METRIC_RESOURCE: 45.0}  # no move changes a query
    u.moved(_pod("p", "n1"), "n1", "n2")
    assert u.delta == {}


def test_describe_source_names_how_usage_was_measured() -> None:
    assert [describe_source(m) for m in (None, K8S, PROM)] == ["requests", "metrics.k8s.io usage", "Prometheus query"]
