"""nodemedic's deschedule-kind strategies next to descheduler v0.36.0's, both in dry-run, on the same kwok cluster:
RemovePodsViolatingNodeAffinity, RemovePodsViolatingInterPodAntiAffinity, RemovePodsHavingTooManyRestarts,
PodLifeTime and RemoveFailedPods.

The harness (nodes, pods, owners, descheduler's settled cycle, `nodemedic-remediator plan --json`, the report) is
descheduler_comparison_harness.py; the scenarios (deschedule_comparison_scenarios.py) add pods whose status says
what these strategies read (restart counts, waiting/terminated reasons, exit codes, phase Failed), written once
kwok has them Running. What only one tool evicts must be the scenario's declared differences, each an ID
documented in docs/deschedule-strategies.md.

Run: .venv/bin/python -m pytest tests/e2e/test_descheduler_comparison_deschedule.py -q -s  (-s prints the report)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import LocalCluster
from tests.e2e.deschedule_comparison_scenarios import SCENARIOS
from tests.e2e.descheduler_comparison_harness import (  # the fixtures, by name, give this module its own cluster
    Scenario,
    build,  # noqa: F401
    compare,
    compare_cluster,  # noqa: F401
    undocumented,
)

# One xdist worker runs the whole module: its tests share one comparison cluster (module-scoped compare_cluster).
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("descheduler_comparison_deschedule")]

DOC = Path(__file__).resolve().parents[2] / "docs" / "deschedule-strategies.md"


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_scenario(scenario: Scenario, compare_cluster: LocalCluster, build: Any, tmp_path: Path) -> None:  # noqa: F811
    compare(scenario, compare_cluster, build, tmp_path)


def test_every_difference_id_is_documented() -> None:
    missing = undocumented(SCENARIOS, DOC)
    assert not missing, f"difference IDs used by the comparison but not in {DOC}: {missing}"
