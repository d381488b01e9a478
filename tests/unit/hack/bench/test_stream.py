"""The stream benchmark's pure parts: the day's events from a seed, node-hours, the PDB book, the summary table."""

from __future__ import annotations

import pytest

from hack.bench import stream
from hack.bench.lib import stream_plan as sp
from hack.bench.lib import trace_figures as tf


def test_the_same_seed_makes_the_same_day_and_another_seed_another() -> None:
    one = sp.plan(7, hours=24, deployments=40)
    assert one == sp.plan(7, hours=24, deployments=40)
    assert one.events != sp.plan(8, hours=24, deployments=40).events


@pytest.mark.parametrize("seed", range(5))
def test_every_event_lies_within_the_day_in_order_and_follows_its_deployment(seed: int) -> None:
    p = sp.plan(seed, hours=6, deployments=25)
    assert len(p.deployments) == 25
    assert [e.at_h for e in p.events] == sorted(e.at_h for e in p.events)
    alive: dict[str, int] = {}
    for e in p.events:
        assert 0 <= e.at_h < 6
        if e.kind is sp.Kind.CREATE:
            assert e.deployment not in alive
            alive[e.deployment] = e.replicas
        else:
            assert e.deployment in alive, f"{e} before its Deployment was made"
            if e.kind is sp.Kind.DELETE:
                del alive[e.deployment]
            else:
                assert e.replicas != alive[e.deployment], "a scale event changes the replicas"
                alive[e.deployment] = e.replicas
    most = max(r for r, _ in tf.REPLICAS)
    assert all(1 <= e.replicas <= round(most * 1.5) for e in p.events if e.kind is not sp.Kind.DELETE)


def test_some_deployments_are_there_at_hour_zero_and_the_rest_arrive_during_the_day() -> None:
    p = sp.plan(3, hours=24, deployments=50)
    at_start = [d for d in p.deployments if d.arrive_h == 0]
    assert len(at_start) == round(50 * sp.INITIAL_FRACTION)
    assert all(0 < d.arrive_h < 24 for d in p.deployments if d not in at_start)
    assert all(d.leave_h > d.arrive_h for d in p.deployments)


def test_pod_shapes_are_the_trace_shapes_scaled_by_one_factor() -> None:
    p = sp.plan(11, hours=24, deployments=60)
    scaled = {s.scaled() for s in tf.SHAPES}
    assert {(d.cpu_m, d.memory_mi) for d in p.deployments} <= scaled
    assert tf.Shape(32000, 49152, 1).scaled() == (2000, 3072)


def test_replicas_follow_the_daily_cycle_at_least_one() -> None:
    assert sp.cycled(1, 0) >= 1
    quiet, busy = sp.cycled(4, 11 - sp.START_HOUR), sp.cycled(4, 23 - sp.START_HOUR)
    assert quiet < busy, "the trace's hour 11 is quieter than its hour 23"


def test_the_peak_is_the_most_cpu_asked_at_once() -> None:
    d = [sp.Deployment("a", 1000, 100, 2, 0, 5), sp.Deployment("b", 500, 100, 1, 1, 5)]
    events = (sp.Event(0, sp.Kind.CREATE, "a", 2), sp.Event(1, sp.Kind.CREATE, "b", 1),
              sp.Event(2, sp.Kind.SCALE, "a", 1), sp.Event(3, sp.Kind.DELETE, "b", 0))
    assert sp.peak_requested(sp.Plan(tuple(d), events)) == (3, 2500, 1)


def test_a_node_counts_from_added_to_removed_within_the_window_in_simulated_hours() -> None:
    added = {"n1": 100.0, "n2": 90.0, "n3": 150.0}  # n2 before the window, n3 never removed
    removed = {"n1": 140.0, "n2": 130.0}
    # n1 40 s, n2 30 s (from 100), n3 50 s (to 200): 120 real s at 20 s an hour = 6 node-hours
    assert sp.node_hours(added, removed, start=100, end=200, hour_seconds=20) == pytest.approx(6.0)
    assert sp.node_hours({}, {}, start=0, end=10, hour_seconds=20) == 0
    with pytest.raises(ValueError):
        sp.node_hours(added, removed, start=0, end=1, hour_seconds=0)


def test_pending_is_summarized_by_nearest_rank() -> None:
    assert sp.summarize_pending([]) == (0, 0.0, 0.0, 0.0)
    assert sp.summarize_pending([4.0, 1.0, 2.0, 3.0, 10.0]) == (5, 20.0, 3.0, 10.0)


def sample(book: sp.DisruptionBook, serving: dict[str, set[str]], existing: dict[str, set[str]] | None = None,
           wanted: dict[str, int] | None = None) -> None:
    existing = existing if existing is not None else serving
    book.sample(serving, existing, wanted or {d: 3 for d in serving})


def test_a_scale_down_the_stream_announced_is_no_disruption() -> None:
    book = sp.DisruptionBook()
    sample(book, {"d": {"a", "b", "c"}})
    book.expect("d", 2)
    sample(book, {"d": {"a"}}, wanted={"d": 1})
    assert (book.disruptions, book.violations) == (0, 0)


def test_a_scale_down_takes_the_pods_not_yet_serving_first() -> None:
    book = sp.DisruptionBook()
    sample(book, {"d": {"a", "b"}}, {"d": {"a", "b", "p"}})  # p pending
    book.expect("d", 1)
    sample(book, {"d": {"a", "b"}}, wanted={"d": 2})  # p removed by the scale-down
    sample(book, {"d": {"a"}}, {"d": {"a", "r"}}, wanted={"d": 2})  # b evicted, r its replacement
    assert book.disruptions == 1


def test_one_pod_evicted_at_a_time_is_within_the_pdb_and_closes_once_replaced() -> None:
    book = sp.DisruptionBook()
    sample(book, {"d": {"a", "b", "c"}})
    sample(book, {"d": {"b", "c"}}, {"d": {"b", "c", "a2"}})
    sample(book, {"d": {"a2", "b", "c"}})
    sample(book, {"d": {"a2", "c"}}, {"d": {"a2", "c", "b2"}})
    assert (book.disruptions, book.violations, book.worst) == (2, 0, 1)


def test_two_pods_lost_at_once_violate_the_pdb_once_however_long() -> None:
    book = sp.DisruptionBook()
    sample(book, {"d": {"a", "b", "c"}})
    sample(book, {"d": {"c"}}, {"d": {"c", "x", "y"}})
    sample(book, {"d": {"c"}}, {"d": {"c", "x", "y"}})
    assert (book.disruptions, book.violations, book.worst) == (2, 1, 2)


def test_a_retired_deployments_pods_are_not_disruptions() -> None:
    book = sp.DisruptionBook()
    sample(book, {"d": {"a", "b"}})
    book.retire("d")
    sample(book, {}, {})
    assert book.disruptions == 0


def test_the_summary_puts_both_runs_side_by_side_with_their_ratio() -> None:
    alone = {key: 10.0 for _, key, _ in stream.ROWS}
    engines = {**alone, "node_hours": 8.0, "evicted_nodemedic": 3.0}
    alone["evicted_nodemedic"] = 0.0
    lines = stream.summary(alone, engines)
    assert lines[0].split()[:2] == ["per", "run"] and stream.ALONE in lines[0] and stream.ENGINES in lines[0]
    assert len(lines) == 1 + len(stream.ROWS)
    node_hours = next(line for line in lines if line.startswith("node-hours"))
    assert node_hours.split()[-3:] == ["10.0", "8.0", "0.80"]
    assert next(line for line in lines if line.startswith("pods evicted by nodemedic")).endswith("n/a")
    assert stream.saving(alone, engines) == pytest.approx(20.0)


def test_the_placement_engine_alone_leaves_balancing_out() -> None:
    text = stream.policy("ns", "pool", balancing=False)
    assert "MakeRoomForPendingPods" in text and "BalanceResourceMix" not in text


def test_the_policy_runs_both_engines_automatically_on_the_runs_pool_with_planned_landing() -> None:
    text = stream.policy("ns", "pool")
    for part in ("MakeRoomForPendingPods", "BalanceResourceMix", "approval: automatic", "landing: planned",
                 "nodeSelector: karpenter.sh/nodepool=pool", "include: [ns]"):
        assert part in text
