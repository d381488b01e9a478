"""Zone-loss exposure: for every workload with more than one replica, the share of its replicas that survive the
loss of the zone holding most of them, the share an even spread would keep, and the fewest moves to that spread.

A workload is its controller: a ReplicaSet's pods count under the Deployment that made it (its name less the
pod-template-hash suffix), so both revisions of a rolling update count together. The zones are those of the
cluster's Ready, schedulable nodes; a node without a zone label is a zone of its own (losing it loses its pods).
One pass over the pods by owner, the workload's name worked out once per owner: linear in pods.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from remediator.model.plan import ZoneExposure, ZoneMove
from remediator.model.records import PodRecord
from remediator.planning.zone_exposure_kept import KeptExposures, OwnerZones
from remediator.state.snapshot import Snapshot

ZONE = "topology.kubernetes.io/zone"
TEMPLATE_HASH = "pod-template-hash"
REPLICATED = frozenset({"ReplicaSet", "StatefulSet", "ReplicationController"})
NO_WORKLOAD = OwnerZones(None, {})


def workload_of(pod: PodRecord) -> str | None:
    """"Kind/name" of the replicated workload the pod belongs to, or None: a pod no ReplicaSet, StatefulSet or
    ReplicationController controls (a DaemonSet is in every zone it can be by design; a Job's pods finish)."""
    owner = pod.controller
    if owner is None or not owner.controller or owner.kind not in REPLICATED:
        return None
    suffix = pod.labels.get(TEMPLATE_HASH)
    if owner.kind == "ReplicaSet" and suffix and owner.name.endswith("-" + suffix):
        return f"Deployment/{owner.name[:-len(suffix) - 1]}"
    return f"{owner.kind}/{owner.name}"


def zone_exposure(snapshot: Snapshot, min_share: float) -> list[ZoneExposure]:
    """Every replicated workload's shares; the zones and moves only for those `exposed(min_share)`. Only the owners
    whose pods changed since the last plan are counted again, and only their workloads' exposures worked out again
    (zone_exposure_kept.py)."""
    zone_of = {name: n.labels.get(ZONE) or name for name, n in snapshot.nodes.items()}
    zones = sorted({zone_of[name] for name, n in snapshot.nodes.items()
                    if n.ready and not n.unschedulable and not n.deleting})
    if len(zones) < 2:
        return []  # one zone: nothing survives its loss, and no spread does better
    derived = snapshot.derived
    kept = derived.zone_exposure
    if not isinstance(kept, KeptExposures):
        kept = derived.zone_exposure = KeptExposures()
    return kept.within((zone_of, zones, min_share)).exposures_of(
        snapshot.pods_by_owner, _owner_zones(zone_of), partial(_exposure, zones=zones, min_share=min_share))


def _exposure(workload: tuple[str, str], per_zone: dict[str, int], *, zones: list[str],
              min_share: float) -> ZoneExposure | None:
    """The workload's shares (None with fewer than two replicas counted); its zones and moves when exposed."""
    total = sum(per_zone.values())
    if total < 2:
        return None
    namespace, name = workload
    surviving = (total - max(per_zone.values())) / total
    best = (total - -(-total // len(zones))) / total  # the fullest zone of an even spread holds ceil(total/zones)
    if surviving < min_share and surviving < best:  # exposed: the zones by name and the moves to an even spread
        full = {z: per_zone.get(z, 0) for z in sorted(set(zones) | set(per_zone))}
        moves = _moves(full, _even(full, len(zones)))
        return ZoneExposure(namespace, name, tuple(full.items()), surviving, best, moves)
    return ZoneExposure(namespace, name, (), surviving, best, ())  # the gauges need no more


def _owner_zones(zone_of: dict[str, str]) -> Callable[[list[PodRecord]], OwnerZones]:
    """An owner's pods -> its workload and live pods per zone (its name worked out once per owner)."""
    zone_at = zone_of.get

    def owner_zones(pods: list[PodRecord]) -> OwnerZones:
        workload = workload_of(pods[0]) if pods else None
        if workload is None:
            return NO_WORKLOAD
        per_zone: dict[str, int] = {}
        for p in pods:  # every pod of the cluster when nothing is kept: a plain dict, where Counters cost twice as much
            if p.live and (zone := zone_at(p.node_name)) is not None:  # None: not bound, or a node the snapshot lacks
                per_zone[zone] = per_zone.get(zone, 0) + 1
        return OwnerZones((pods[0].namespace, workload), per_zone)
    return owner_zones


def _even(counts: dict[str, int], zones: int) -> dict[str, int]:
    """The most even spread over `zones` zones reached with the fewest moves: every zone gets total // zones, and the
    remainder stays in the zones that hold most now."""
    total = sum(counts.values())
    base, extra = divmod(total, zones)
    order = sorted(counts, key=lambda z: (-counts[z], z))
    usable = order[:zones] if len(order) >= zones else order
    target = {z: 0 for z in counts}
    for i, z in enumerate(usable):
        target[z] = base + (1 if i < extra else 0)
    return target


def _moves(counts: dict[str, int], target: dict[str, int]) -> tuple[ZoneMove, ...]:
    """From the fullest zones above their target to the emptiest below theirs (the two excesses are equal)."""
    over = [(z, counts[z] - target[z]) for z in sorted(counts, key=lambda z: (-counts[z], z)) if counts[z] > target[z]]
    under = [(z, target[z] - counts[z]) for z in sorted(counts, key=lambda z: (counts[z], z)) if counts[z] < target[z]]
    moves = []
    for source, excess in over:
        left = excess
        while left and under:
            zone, need = under[0]
            n = min(left, need)
            moves.append(ZoneMove(source, zone, n))
            left -= n
            under[0:1] = [] if n == need else [(zone, need - n)]
    return tuple(moves)
