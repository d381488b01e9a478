"""How full a node is, for the utilization strategies: by requests (the default), or as a metrics source measured it
(`metricsUtilization`), kept current through the moves the cycle plans.

Requests: the gate's books (`Gate.usage`). Measured by metrics.k8s.io: the node's cpu and memory as reported, less
what the pods planned to leave it use, plus what the pods planned to arrive use (a pod's own measured usage, or its
requests when it has none: the scheduler's estimate); `pods` is counted as with requests. Measured by a Prometheus
query: one number per node, `MetricResource` in percent, which no planned move changes (the query cannot say what a
pod contributes). A node the source did not report is unknown: `percentages` returns None for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from remediator.model.records import PodRecord
from remediator.planning.gate import Gate
from remediator.policy.measured_usage import KUBERNETES_METRICS, METRIC_RESOURCE, MetricsUtilization
from remediator.scheduling.nodefit import PODS
from remediator.scheduling.usage import Percentages, percentages
from remediator.state.snapshot import Snapshot

_MEASURED = ("cpu", "memory")


class Utilization:
    def __init__(self, snapshot: Snapshot, gate: Gate, metrics: MetricsUtilization | None,
                 resources: Iterable[str]) -> None:
        self.snapshot, self.gate, self.metrics = snapshot, gate, metrics
        self.resources = tuple(resources)
        self.scores: Mapping[str, float] = {}
        self.delta: dict[str, dict[str, int]] = {}  # node -> measured usage planned moves add (negative: take)
        if metrics is None:
            return
        if metrics.source != KUBERNETES_METRICS:
            self.scores = snapshot.measured.scores.get(metrics.query, {})
            return
        # The moves earlier cycles made that the snapshot does not show yet, and those earlier strategies of this
        # cycle planned: the measured usage still has them where they were.
        for pod, destination in gate.view.leaving:
            self._shift(pod, pod.node_name, destination)
        for e in gate.view.planned:
            self._shift(e.pod, e.pod.node_name, gate.view.moved_to.get(e.pod.uid))

    @property
    def by_requests(self) -> bool:
        return self.metrics is None

    @property
    def per_pod(self) -> bool:
        """Does the source say what each pod uses? (Not a Prometheus query: it measures nodes only.)"""
        return self.metrics is None or self.metrics.source == KUBERNETES_METRICS

    def used(self, node: str) -> dict[str, int] | None:
        """The node's usage in absolute units after the cycle's planned moves; None when unknown."""
        if self.metrics is None:
            return self.gate.view.usage(node)
        if not self.per_pod:
            return None
        measured = self.snapshot.measured.nodes.get(node)
        if measured is None:
            return None
        used = {r: measured.get(r, 0) for r in _MEASURED}
        for r, q in self.delta.get(node, {}).items():
            used[r] = used.get(r, 0) + q
        used[PODS] = self.gate.view.usage(node).get(PODS, 0)
        return used

    def percentages(self, node: str) -> Percentages | None:
        """The configured resources in percent of allocatable (MetricResource: the query's value); None: unknown."""
        if self.metrics is not None and not self.per_pod:
            score = self.scores.get(node)
            # descheduler keeps the whole percent of the sample (int(value * 100)).
            return None if score is None else {METRIC_RESOURCE: float(int(score * 100))}
        used = self.used(node)
        if used is None:
            return None
        return percentages(used, self.snapshot.nodes[node].allocatable, self.resources)

    def pod(self, pod: PodRecord) -> dict[str, int] | None:
        """What the pod uses: its requests, or its measured usage (None when unknown; {} with a Prometheus query,
        which measures no pod)."""
        if self.metrics is None:
            return dict(pod.requests)
        if not self.per_pod:
            return {}
        return self.snapshot.measured.pods.get(pod.key)

    def with_pod(self, node: str, pod: PodRecord, requests_after: Mapping[str, int]) -> Percentages | None:
        """The destination's percentages with `pod` added (`requests_after`: node fit's requests with it)."""
        if self.metrics is None:
            return percentages(requests_after, self.snapshot.nodes[node].allocatable, self.resources)
        now = self.percentages(node)
        if now is None or not self.per_pod:
            return now
        used = self.used(node) or {}
        adds = self.pod(pod) or pod.requests
        after = {r: used.get(r, 0) + adds.get(r, 0) for r in _MEASURED}
        after[PODS] = requests_after.get(PODS, 0)
        return percentages(after, self.snapshot.nodes[node].allocatable, self.resources)

    def moved(self, pod: PodRecord, source: str, destination: str | None) -> None:
        """Book a move this strategy planned (requests are booked by the cycle itself)."""
        if self.metrics is not None and self.per_pod:
            self._shift(pod, source, destination)

    def _shift(self, pod: PodRecord, source: str, destination: str | None) -> None:
        usage = self.snapshot.measured.pods.get(pod.key) or pod.requests
        for node, sign in ((source, -1), (destination, 1)):
            if node is None:
                continue
            books = self.delta.setdefault(node, {})
            for r in _MEASURED:
                books[r] = books.get(r, 0) + sign * usage.get(r, 0)


def describe_source(metrics: MetricsUtilization | None) -> str:
    """How the usage in a reason was measured."""
    if metrics is None:
        return "requests"
    return "metrics.k8s.io usage" if metrics.source == KUBERNETES_METRICS else "Prometheus query"

