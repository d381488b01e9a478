"""The plan's own items: what a zone exposure counts and says, what a scheduler loop says."""

from __future__ import annotations

import datetime as dt

from remediator.model.plan import Plan, SchedulerLoop, ZoneExposure, ZoneMove

NOW = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.UTC)


def exposure(per_zone: tuple[tuple[str, int], ...], surviving: float, best: float) -> ZoneExposure:
    return ZoneExposure("shop", "Deployment/web", per_zone, surviving, best, (ZoneMove("a", "b", 1),))


def test_a_workload_is_exposed_only_below_the_share_and_when_a_better_spread_is_possible() -> None:
    assert exposure((("a", 3), ("b", 1)), surviving=0.25, best=0.5).exposed(0.5)
    assert not exposure((("a", 2), ("b", 2)), surviving=0.5, best=0.5).exposed(0.5)  # at the share
    # two replicas in three zones: half is the best there is, so it is not called exposed
    assert not exposure((("a", 1), ("b", 1), ("c", 0)), surviving=0.5, best=0.5).exposed(0.9)


def test_a_zone_exposure_describes_its_replicas_zones_and_the_moves_that_fix_it() -> None:
    described = exposure((("a", 3), ("b", 1)), surviving=0.25, best=0.5).describe()
    assert described == ("shop/Deployment/web: 25% of 4 replicas survive the loss of its worst zone (a=3, b=1); "
                         "50% with move 1 from a to b")


def test_a_scheduler_loop_says_until_when_in_utc_whole_seconds() -> None:
    until = (NOW + dt.timedelta(minutes=30, microseconds=5)).astimezone(dt.timezone(dt.timedelta(hours=2)))
    loop = SchedulerLoop("shop", "ReplicaSet/web-7d9f", "uid", "n1", moved_at=NOW, since=NOW, until=until)
    assert "no balance move of it until 2026-06-01T12:30:00Z" in loop.describe()
    assert "moved off n1" in loop.describe()


def test_a_new_plan_holds_nothing_and_no_report() -> None:
    plan = Plan()
    assert (plan.taints_add, plan.evictions, plan.reports) == ([], [], {})
