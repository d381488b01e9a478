"""nodemedic's RemoveDuplicates and RemovePodsViolatingTopologySpreadConstraint next to descheduler v0.36.0's, both in
dry-run, on the same kwok cluster, with the harness of descheduler_comparison_harness.py (scenario building, one
settled descheduler cycle, `nodemedic-remediator plan --json`, the report). What only one tool evicts must be
exactly the scenario's declared differences, each a documented id (docs/balance-strategies.md, and
docs/utilization.md for the cycle gate's own).

RemoveDuplicates picks the duplicates of a node in descheduler's listing order, which is not a property of the
pods; so its evictions are compared as "owner@node#k" (the k-th eviction of that owner's replicas from that
node), and its differences are declared in that form. The spread scenarios give every pod a distinct priority,
so "which pods" is a deterministic question for both.

Run: .venv/bin/python -m pytest tests/e2e/test_descheduler_comparison_balance.py -q -s  (-s prints the report)
"""

from __future__ import annotations

import os
import re
import secrets
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.e2e.balance_comparison_scenarios import DUPLICATES, SCENARIOS
from tests.e2e.conftest import LocalCluster, _started
from tests.e2e.descheduler_comparison_harness import (
    Built,
    Scenario,
    build,
    report,
    run_descheduler,
    run_nodemedic,
)

# One xdist worker runs the whole module: its tests share one comparison cluster (module-scoped compare_cluster).
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("descheduler_comparison_balance")]
__all__ = ["build"]  # the scenario-building fixture, used by name

DOCS = [Path(__file__).resolve().parents[2] / "docs" / name for name in ("balance-strategies.md", "utilization.md")]
ALL_IDS = sorted({i for s in SCENARIOS for i in (*s.only_descheduler.values(), *s.only_nodemedic.values())})


@pytest.fixture(scope="module")
def compare_cluster() -> Iterator[LocalCluster]:
    """A control plane of its own with no nodes but the running scenario's, and these scenarios' priorities."""
    with _started(f"pytest-{os.getpid()}-compare-balance-{secrets.token_hex(2)}", 0) as started:
        sched = client.SchedulingV1Api(started.api)
        for value in sorted({p.priority for s in SCENARIOS for p in s.pods if p.priority is not None}):
            sched.create_priority_class({"metadata": {"name": f"compare-{value}"}, "value": value})
        assert not client.CoreV1Api(started.api).list_node().items, "the comparison cluster must start without nodes"
        yield started


def by_slot(s: Scenario, evicted: set[str]) -> set[str]:
    """RemoveDuplicates' evictions as owner@node#k; other strategies' as pod names."""
    if DUPLICATES not in s.strategies:
        return evicted
    pods = {p.name: p for p in s.pods}
    slots: set[str] = set()
    seen: Counter[str] = Counter()
    for name in sorted(evicted):
        p = pods[name]
        group = f"{p.owner or p.name}@{p.node}"
        seen[group] += 1
        slots.add(f"{group}#{seen[group]}")
    return slots


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_scenario(scenario: Scenario, compare_cluster: LocalCluster, build: Any, tmp_path: Path) -> None:
    built: Built = build(scenario)
    d = run_descheduler(compare_cluster, scenario, built, tmp_path)
    n = run_nodemedic(compare_cluster, scenario, built, tmp_path)
    text = report(scenario, d, n)
    print("\n" + text)
    d_slots, n_slots = by_slot(scenario, d.pods), by_slot(scenario, n.pods)
    only_d, only_n = d_slots - n_slots, n_slots - d_slots
    want_d, want_n = set(scenario.only_descheduler), set(scenario.only_nodemedic)
    assert (only_d, only_n) == (want_d, want_n), (
        f"the differences are not the declared ones\n{text}\n"
        f"  only descheduler: {sorted(only_d)}, declared {sorted(want_d)}\n"
        f"  only nodemedic:   {sorted(only_n)}, declared {sorted(want_n)}")


def test_every_difference_id_is_documented() -> None:
    text = "".join(doc.read_text() for doc in DOCS)
    missing = [i for i in ALL_IDS if not re.search(rf"`{re.escape(i)}`", text)]
    assert not missing, f"difference IDs used by the comparison but not documented: {missing}"
