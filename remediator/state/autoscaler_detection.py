"""Which node autoscaler the cluster runs, from what the API shows of it: for `autoscaler.addsNodes: auto`.

* Karpenter: the API serves its NodePool kind, `nodepools` in the discovery document of karpenter.sh/v1 (Karpenter
  1.0 and later). Discovery is readable by every authenticated user: no grant needed.
* cluster-autoscaler: its status ConfigMap exists, kube-system/cluster-autoscaler-status (the default of its
  `--status-config-map-name`). Read as metadata only; the chart grants `get` on that one ConfigMap and no other.

An answer decides: 404 (not served, no such ConfigMap) and 403 (not ours to see) are "not detected", as is a
discovery document without nodepools. Any other failure (a 5xx, no connection, a body that is not the API's) keeps
what was found before, so a flaky API server never flips the plan. Each outcome is logged when it changes, not at
every look: one line when an autoscaler is detected or no longer is, and once per distinct reason it is not.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from prometheus_client import Gauge

from nodemedic_common.kube_client import PARTIAL_METADATA, Kube
from nodemedic_common.kube_errors import ApiError
from remediator.policy.autoscaler import AUTO
from remediator.policy.model import Policy
from remediator.state.snapshot import NodeAutoscaler

KARPENTER_DISCOVERY = "/apis/karpenter.sh/v1"
CLUSTER_AUTOSCALER_STATUS = ("kube-system", "cluster-autoscaler-status")
REDETECT = 300.0  # seconds between two detections: an autoscaler installed later is counted on within this
PROBE_TIMEOUT = 10.0  # seconds: a detection runs before a planning cycle and must not hold it for long


@dataclass(frozen=True)
class Probe:
    """What one look at the API said of one autoscaler."""

    present: bool | None  # None: the API did not answer; what was found before stands
    evidence: str  # for people: what was seen, or why nothing could be


async def probe_karpenter(kube: Kube) -> Probe:
    try:
        doc = await kube.request("GET", KARPENTER_DISCOVERY, timeout=PROBE_TIMEOUT)
    except ApiError as e:
        return _refusal(e)
    resources = doc.get("resources") if isinstance(doc, dict) else None
    if not isinstance(resources, list):
        return Probe(None, f"GET {KARPENTER_DISCOVERY}: the answer is not an APIResourceList")
    if any(isinstance(r, dict) and r.get("name") == "nodepools" for r in resources):
        return Probe(True, "the API serves karpenter.sh/v1 nodepools")
    return Probe(False, "the API serves karpenter.sh/v1 without nodepools")


async def probe_cluster_autoscaler(kube: Kube) -> Probe:
    namespace, name = CLUSTER_AUTOSCALER_STATUS
    path = f"/api/v1/namespaces/{namespace}/configmaps/{name}"
    try:
        doc = await kube.request("GET", path, accept=PARTIAL_METADATA, timeout=PROBE_TIMEOUT)
    except ApiError as e:
        return _refusal(e)
    if not isinstance(doc, dict) or not isinstance(doc.get("metadata"), dict):
        return Probe(None, f"GET {path}: the answer is not an object with metadata")
    return Probe(True, f"ConfigMap {namespace}/{name} exists")


def _refusal(e: ApiError) -> Probe:
    if e.status == 404:
        return Probe(False, str(e))
    if e.status == 403:
        return Probe(False, f"{e} (not ours to see: counted as not there)")
    return Probe(None, str(e))


# Every autoscaler `auto` can find, and how: the one list to extend.
PROBES: dict[NodeAutoscaler, Callable[[Kube], Awaitable[Probe]]] = {
    NodeAutoscaler.KARPENTER: probe_karpenter,
    NodeAutoscaler.CLUSTER_AUTOSCALER: probe_cluster_autoscaler,
}


async def detect(kube: Kube) -> dict[NodeAutoscaler, Probe]:
    """One look for each autoscaler, together."""
    probes = await asyncio.gather(*(probe(kube) for probe in PROBES.values()))
    return dict(zip(PROBES, probes, strict=True))


class AutoscalerDetector:
    """What the controller's cycles count on: the autoscalers found, looked for again every `interval` seconds."""

    def __init__(self, kube: Kube, *, gauge: Gauge, log: logging.Logger, interval: float = REDETECT,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.kube, self.gauge, self.log, self.interval, self.monotonic = kube, gauge, log, interval, monotonic
        self.found: frozenset[NodeAutoscaler] = frozenset()
        self.detected_at: float | None = None  # monotonic time of the last detection
        self.said: dict[NodeAutoscaler, str] = {}  # the evidence last logged for each autoscaler

    async def current(self, policy: Policy) -> frozenset[NodeAutoscaler]:
        """The autoscalers found, detected again when `interval` has passed. Nothing is looked for (and nothing
        counted on) while the policy's `autoscaler.addsNodes` is true or false: the policy has said."""
        if policy.autoscaler.adds_nodes != AUTO:
            return frozenset()
        now = self.monotonic()
        if self.detected_at is None or now - self.detected_at >= self.interval:
            self.detected_at = now
            await self.detect()
        return self.found

    async def detect(self) -> frozenset[NodeAutoscaler]:
        """Look once; log what changed and set the gauge."""
        found = set(self.found)
        for autoscaler, probe in (await detect(self.kube)).items():
            fields = {"autoscaler": str(autoscaler), "evidence": probe.evidence}
            if probe.present is None:
                failed = "node autoscaler detection failed, keeping the last answer"
                self._once(autoscaler, probe, logging.WARNING, failed, {**fields, "detected": autoscaler in found})
                continue
            if probe.present and autoscaler not in found:
                self.log.info("node autoscaler detected", extra=fields)
                found.add(autoscaler)
            elif not probe.present and autoscaler in found:
                self.log.warning("node autoscaler no longer detected", extra=fields)
                found.discard(autoscaler)
            elif not probe.present:
                self._once(autoscaler, probe, logging.INFO, "node autoscaler not detected", fields)
            self.said[autoscaler] = probe.evidence
        self.found = frozenset(found)
        for autoscaler in NodeAutoscaler:
            self.gauge.labels(str(autoscaler)).set(1 if autoscaler in self.found else 0)
        return self.found

    def _once(self, autoscaler: NodeAutoscaler, probe: Probe, level: int, message: str,
              fields: Mapping[str, object]) -> None:
        if self.said.get(autoscaler) != probe.evidence:
            self.log.log(level, message, extra=fields)
            self.said[autoscaler] = probe.evidence
