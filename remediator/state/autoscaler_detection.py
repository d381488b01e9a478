"""Which node autoscaler the cluster runs, from what the API shows of it at work: for `autoscaler.addsNodes: auto`.

Existence is not enough: an autoscaler's objects outlive it (autoscaler_activity.py). Each is found by a time only a
running one keeps fresh, no older than the policy's `autoscaler.activeWithin`:

* Karpenter: the API serves its NodePool kind (`nodepools` in the discovery document of karpenter.sh/v1, Karpenter
  1.0 and later; readable by every authenticated user), *and* a Lease `karpenter-leader-election` (its leader
  election's, in whatever namespace Karpenter runs) is held and was renewed within `activeWithin`. Listed across
  namespaces with a `metadata.name` field selector, which the chart's grant is narrowed to by name.
* cluster-autoscaler: its status ConfigMap, kube-system/cluster-autoscaler-status (the default of its
  `--status-config-map-name`), carries the annotation `cluster-autoscaler.kubernetes.io/last-updated` it rewrites at
  every loop, within `activeWithin`. Read as metadata only; the chart grants `get` on that one ConfigMap.

An answer decides: 404 (not served, no such object) and 403 (not ours to see) are "not detected", as is a discovery
document without nodepools, no held Lease, or a stamp missing, unreadable, stale or far in the future. Any other
failure (a 5xx, no connection, a body that is not the API's) keeps what was found before, so a flaky API server
never flips the plan. Each outcome is logged when it changes, not at every look: one line when an autoscaler is
detected or no longer is (with the signal and its age), and once per distinct reason it is not.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client import Gauge

from nodemedic_common.kube_client import PARTIAL_METADATA, Kube
from nodemedic_common.kube_errors import ApiError
from remediator.policy.autoscaler import AUTO
from remediator.policy.model import Policy
from remediator.state.autoscaler_activity import judge, parse_cluster_autoscaler_time, parse_kube_time
from remediator.state.snapshot import NodeAutoscaler

KARPENTER_DISCOVERY = "/apis/karpenter.sh/v1"
KARPENTER_LEASE = "karpenter-leader-election"  # its LeaderElectionID (LEADER_ELECTION_NAME since v1.1 may rename it)
LEASES = "/apis/coordination.k8s.io/v1/leases"
CLUSTER_AUTOSCALER_STATUS = ("kube-system", "cluster-autoscaler-status")
CLUSTER_AUTOSCALER_LAST_UPDATED = "cluster-autoscaler.kubernetes.io/last-updated"
REDETECT = 300.0  # seconds between two detections: an autoscaler installed later is counted on within this
PROBE_TIMEOUT = 10.0  # seconds: a detection runs before a planning cycle and must not hold it for long


@dataclass(frozen=True)
class Probe:
    """What one look at the API said of one autoscaler."""

    present: bool | None  # None: the API did not answer; what was found before stands
    evidence: str  # for people: what was seen (which signal, how old), or why nothing could be
    key: str = ""  # what is logged once (the evidence less an age that grows at every look); "" is the evidence

    @property
    def said(self) -> str:
        return self.key or self.evidence


async def probe_karpenter(kube: Kube, now: dt.datetime, active_within: dt.timedelta) -> Probe:
    try:
        doc = await kube.request("GET", KARPENTER_DISCOVERY, timeout=PROBE_TIMEOUT)
    except ApiError as e:
        return _refusal(e)
    resources = doc.get("resources") if isinstance(doc, dict) else None
    if not isinstance(resources, list):
        return Probe(None, f"GET {KARPENTER_DISCOVERY}: the answer is not an APIResourceList")
    if not any(isinstance(r, dict) and r.get("name") == "nodepools" for r in resources):
        return Probe(False, "the API serves karpenter.sh/v1 without nodepools")
    return await _karpenter_lease(kube, now, active_within)


async def _karpenter_lease(kube: Kube, now: dt.datetime, active_within: dt.timedelta) -> Probe:
    """The CRDs are served; is a Karpenter controller leading? The freshest held Lease of that name says."""
    selector = f"metadata.name={KARPENTER_LEASE}"
    try:
        doc = await kube.request("GET", LEASES, params={"fieldSelector": selector}, timeout=PROBE_TIMEOUT)
    except ApiError as e:
        return _refusal(e, "the API serves karpenter.sh/v1 nodepools, but ")
    items = doc.get("items") if isinstance(doc, dict) else None
    if items is None and isinstance(doc, dict) and isinstance(doc.get("kind"), str):
        items = []  # an empty list is sent as `items: null` by some servers
    if not isinstance(items, list):
        return Probe(None, f"GET {LEASES}?fieldSelector={selector}: the answer is not a LeaseList")
    held = [lease for item in items if (lease := _lease(item)) is not None and lease[1]]
    if not held:
        why = "none is held (a controller shut down cleanly releases it)" if items else "there is none"
        return Probe(False, f"the API serves karpenter.sh/v1 nodepools (its CRDs), but no Karpenter controller "
                            f"leads: of Leases {KARPENTER_LEASE}, {why}")
    best: tuple[dt.datetime, str, str] | None = None
    unreadable = ""
    for name, holder, spec in held:
        renewed = spec.get("renewTime")
        try:
            stamp = parse_kube_time(renewed) if isinstance(renewed, str) else None
        except ValueError as e:
            unreadable = f"Lease {name} spec.renewTime: {e}"
            continue
        if stamp is None:
            unreadable = f"Lease {name} has no spec.renewTime"
        elif best is None or stamp > best[0]:
            best = (stamp, name, holder)
    if best is None:
        return Probe(False, f"the API serves karpenter.sh/v1 nodepools, but {unreadable}: not evidence of a running "
                            f"controller")
    stamp, name, holder = best
    activity = judge(stamp, now, active_within, f"Lease {name} (held by {holder}) renewed")
    return Probe(activity.active, activity.evidence, activity.key)


def _lease(item: object) -> tuple[str, str, dict[str, Any]] | None:
    """(namespace/name, holder or "", spec) of a Lease item; None for an item of the wrong shape."""
    if not isinstance(item, dict):
        return None
    meta, spec = item.get("metadata"), item.get("spec")
    if not isinstance(meta, dict) or not isinstance(spec, dict):
        return None
    holder = spec.get("holderIdentity")
    return f"{meta.get('namespace')}/{meta.get('name')}", holder if isinstance(holder, str) else "", spec


async def probe_cluster_autoscaler(kube: Kube, now: dt.datetime, active_within: dt.timedelta) -> Probe:
    namespace, name = CLUSTER_AUTOSCALER_STATUS
    path = f"/api/v1/namespaces/{namespace}/configmaps/{name}"
    try:
        doc = await kube.request("GET", path, accept=PARTIAL_METADATA, timeout=PROBE_TIMEOUT)
    except ApiError as e:
        return _refusal(e)
    if not isinstance(doc, dict) or not isinstance(meta := doc.get("metadata"), dict):
        return Probe(None, f"GET {path}: the answer is not an object with metadata")
    annotations = meta.get("annotations")
    stamp = annotations.get(CLUSTER_AUTOSCALER_LAST_UPDATED) if isinstance(annotations, dict) else None
    what = f"ConfigMap {namespace}/{name}"
    if not isinstance(stamp, str):
        return Probe(False, f"{what} exists without the annotation {CLUSTER_AUTOSCALER_LAST_UPDATED} that a running "
                            f"cluster-autoscaler writes at every loop: not evidence of one")
    try:
        updated = parse_cluster_autoscaler_time(stamp)
    except ValueError as e:
        return Probe(False, f"{what} annotation {CLUSTER_AUTOSCALER_LAST_UPDATED}: {e}: not evidence of a running "
                            f"cluster-autoscaler")
    activity = judge(updated, now, active_within, f"{what} last updated")
    return Probe(activity.active, activity.evidence, activity.key)


def _refusal(e: ApiError, context: str = "") -> Probe:
    if e.status == 404:
        return Probe(False, f"{context}{e}")
    if e.status == 403:
        return Probe(False, f"{context}{e} (not ours to see: counted as not there)")
    return Probe(None, f"{context}{e}")


# Every autoscaler `auto` can find, and how: the one list to extend.
PROBES: dict[NodeAutoscaler, Callable[[Kube, dt.datetime, dt.timedelta], Awaitable[Probe]]] = {
    NodeAutoscaler.KARPENTER: probe_karpenter,
    NodeAutoscaler.CLUSTER_AUTOSCALER: probe_cluster_autoscaler,
}


async def detect(kube: Kube, now: dt.datetime, active_within: dt.timedelta) -> dict[NodeAutoscaler, Probe]:
    """One look for each autoscaler, together; `now`: the wall clock the autoscalers' stamps are aged against."""
    probes = await asyncio.gather(*(probe(kube, now, active_within) for probe in PROBES.values()))
    return dict(zip(PROBES, probes, strict=True))


class AutoscalerDetector:
    """What the controller's cycles count on: the autoscalers found, looked for again every `interval` seconds."""

    def __init__(self, kube: Kube, *, gauge: Gauge, log: logging.Logger, interval: float = REDETECT,
                 monotonic: Callable[[], float] = time.monotonic,
                 clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC)) -> None:
        self.kube, self.gauge, self.log, self.interval, self.monotonic = kube, gauge, log, interval, monotonic
        self.clock = clock  # the wall clock the autoscalers' own stamps are aged against
        self.found: frozenset[NodeAutoscaler] = frozenset()
        self.detected_at: float | None = None  # monotonic time of the last detection
        self.said: dict[NodeAutoscaler, str] = {}  # the evidence (less its age) last logged for each autoscaler

    async def current(self, policy: Policy) -> frozenset[NodeAutoscaler]:
        """The autoscalers found, detected again when `interval` has passed. Nothing is looked for (and nothing
        counted on) while the policy's `autoscaler.addsNodes` is true or false: the policy has said."""
        if policy.autoscaler.adds_nodes != AUTO:
            return frozenset()
        now = self.monotonic()
        if self.detected_at is None or now - self.detected_at >= self.interval:
            self.detected_at = now
            await self.detect(policy.autoscaler.active_within)
        return self.found

    async def detect(self, active_within: dt.timedelta) -> frozenset[NodeAutoscaler]:
        """Look once; log what changed and set the gauge."""
        found = set(self.found)
        for autoscaler, probe in (await detect(self.kube, self.clock(), active_within)).items():
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
            self.said[autoscaler] = probe.said
        self.found = frozenset(found)
        for autoscaler in NodeAutoscaler:
            self.gauge.labels(str(autoscaler)).set(1 if autoscaler in self.found else 0)
        return self.found

    def _once(self, autoscaler: NodeAutoscaler, probe: Probe, level: int, message: str,
              fields: Mapping[str, object]) -> None:
        if self.said.get(autoscaler) != probe.said:
            self.log.log(level, message, extra=fields)
            self.said[autoscaler] = probe.said
