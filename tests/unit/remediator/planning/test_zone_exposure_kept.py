"""What zone exposure keeps across plans: only owners with a new pod list are counted again, only the workloads they
touch worked out again, and the order follows the workloads that come and go."""

from __future__ import annotations

from remediator.model.plan import ZoneExposure
from remediator.model.records import PodRecord
from remediator.planning.zone_exposure_kept import KeptExposures, OwnerZones, Workload
from tests.unit.remediator.strategies.cluster import pod


class _Counting:
    """`count` and `expose` that record what they were asked."""

    def __init__(self) -> None:
        self.counted: list[str] = []
        self.exposed: list[Workload] = []

    def count(self, pods: list[PodRecord]) -> OwnerZones:
        self.counted.append(pods[0].name)
        workload = None if pods[0].name.startswith("ds") else ("default", "Deployment/" + pods[0].name.split("-")[0])
        per_zone: dict[str, int] = {}
        for p in pods:
            per_zone[p.node_name] = per_zone.get(p.node_name, 0) + 1
        return OwnerZones(workload, per_zone)

    def expose(self, workload: Workload, per_zone: dict[str, int]) -> ZoneExposure:
        self.exposed.append(workload)
        return ZoneExposure(workload[0], workload[1], tuple(sorted(per_zone.items())), 0.0, 0.0, ())

    def run(self, kept: KeptExposures, owners: dict[str, list[PodRecord]]) -> list[ZoneExposure]:
        self.counted.clear()
        self.exposed.clear()
        return kept.exposures_of(owners, self.count, self.expose)


def _pods(name: str, *zones: str) -> list[PodRecord]:
    return [pod(f"{name}-{i}", zone) for i, zone in enumerate(zones)]


def test_unchanged_owner_lists_are_served_without_counting_or_working_out_again() -> None:
    owners = {"o-web": _pods("web", "a", "b"), "o-api": _pods("api", "a", "a"), "o-ds": _pods("ds", "a")}
    kept, seen = KeptExposures().within("zones"), _Counting()
    first = seen.run(kept, owners)
    assert [e.workload for e in first] == ["Deployment/api", "Deployment/web"]  # in workload order
    assert sorted(seen.counted) == ["api-0", "ds-0", "web-0"]
    again = seen.run(kept.within("zones"), dict(owners))  # another snapshot's dict, the same lists
    assert again == first and seen.counted == [] and seen.exposed == []
    assert all(a is b for a, b in zip(again, first, strict=True))


def test_a_new_list_counts_its_owner_and_works_out_its_workload_only() -> None:
    owners = {"o-web": _pods("web", "a", "b"), "o-api": _pods("api", "a", "a")}
    kept, seen = KeptExposures().within("zones"), _Counting()
    seen.run(kept, owners)
    changed = {**owners, "o-api": _pods("api", "a", "b")}
    out = seen.run(kept, changed)
    assert seen.counted == ["api-0"] and seen.exposed == [("default", "Deployment/api")]
    assert dict(out[0].per_zone) == {"a": 1, "b": 1}


def test_a_rollouts_owners_count_together_and_a_gone_owner_leaves_its_workload() -> None:
    old, new = _pods("web", "a", "a"), _pods("web", "b")
    kept, seen = KeptExposures().within("zones"), _Counting()
    [both] = seen.run(kept, {"rs-old": old, "rs-new": new})
    assert dict(both.per_zone) == {"a": 2, "b": 1}
    [after] = seen.run(kept, {"rs-new": new})  # the old ReplicaSet is gone
    assert seen.counted == [] and dict(after.per_zone) == {"b": 1}
    assert seen.run(kept, {}) == [] and kept.members == {} and kept.owners == {}


def test_a_new_workload_takes_its_place_in_the_order() -> None:
    kept, seen = KeptExposures().within("zones"), _Counting()
    seen.run(kept, {"o-web": _pods("web", "a")})
    out = seen.run(kept, {"o-web": _pods("web", "a"), "o-api": _pods("api", "b")})
    assert [e.workload for e in out] == ["Deployment/api", "Deployment/web"]


def test_another_context_forgets_everything() -> None:
    owners = {"o-web": _pods("web", "a", "b")}
    kept, seen = KeptExposures().within({"n1": "a"}), _Counting()
    seen.run(kept, owners)
    seen.run(kept.within({"n1": "a"}), owners)
    assert seen.counted == [], "an equal context (another dict) keeps the values"
    seen.run(kept.within({"n1": "b"}), owners)
    assert seen.counted == ["web-0"] and seen.exposed == [("default", "Deployment/web")]
