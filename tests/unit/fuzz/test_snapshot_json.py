"""Fuzz: `plan --snapshot` on any JSON, mutated from a small cluster: records are built from whatever the objects
hold, and a plan is made with every strategy on, without raising."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from remediator.control.planner import PlannerMemory, make_plan
from remediator.policy.loader import load_policy
from remediator.read_side.plan_answer import PlanAnswer
from remediator.state.caches import snapshot_from_list
from remediator.strategies import CATALOG
from tests.unit.fuzz.seeds import CLUSTER, NOW
from tests.unit.fuzz.strategies import FUZZ, json_values, mutated

ROOT = Path(__file__).resolve().parents[3]
POLICY = load_policy(ROOT / "tests/testdata/policies/good/full.yaml",
                     catalog=CATALOG)  # every strategy, rules, limits, safety


@FUZZ
@given(doc=st.one_of(mutated(CLUSTER), json_values))
def test_any_snapshot_document_plans_without_raising(doc: Any) -> None:
    try:
        snapshot = snapshot_from_list(doc, NOW)
    except ValueError as e:  # `plan` prints it with the file name and exits 2
        assert not isinstance(doc, dict) or not isinstance(doc.get("items"), list | None), e
        return
    plan = make_plan(snapshot, POLICY, PlannerMemory())
    json.dumps(PlanAnswer.of(plan).to_json(), allow_nan=False)
    assert {e.pod.node_name for e in plan.evictions} <= set(snapshot.nodes)
