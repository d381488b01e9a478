"""Fuzz: `plan --snapshot` on any JSON, mutated from a small cluster: records are built from whatever the objects
hold, and a plan is made with every strategy on, without raising. A file nested past the JSON decoder's reach
anywhere in it is refused with its name, line and column, exit 2, no traceback."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from remediator.cli import main
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


SENTINEL = "nested-here"


@settings(FUZZ, max_examples=30)  # each example writes and refuses a file up to ~300 KB
@given(openers=st.lists(st.sampled_from(["[", '{"k": ', "[1, ", '{"a": "]}", "b": ']), min_size=2, max_size=6),
       depth=st.integers(min_value=2_000, max_value=100_000), at=st.integers(min_value=0, max_value=20),
       closed=st.booleans(), indent=st.sampled_from([None, 1]))
def test_a_snapshot_nested_past_the_decoder_is_refused_with_its_place_and_exit_2(
        openers: list[str], depth: int, at: int, closed: bool, indent: int | None) -> None:
    doc = copy.deepcopy(CLUSTER)
    items = doc["items"]
    items.insert(at % (len(items) + 1), SENTINEL)
    levels = [openers[i % len(openers)] for i in range(depth)]
    closers = "".join("]" if o.startswith("[") else "}" for o in reversed(levels))
    deep = "".join(levels) + "0" + (closers if closed else "")
    text = json.dumps(doc, indent=indent).replace(json.dumps(SENTINEL), deep)
    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stderr(io.StringIO()) as said:
        path = Path(tmp) / "deep.json"
        path.write_text(text)
        assert main(["plan", "--policy", str(ROOT / "deploy/policy/default.yaml"), "--snapshot", str(path),
                     "--json"]) == 2
    (message,) = said.getvalue().splitlines()
    assert message.startswith(f"{path}: line ") and "JSON nested deeper than 256 levels" in message
    line, column = (int(n) for n in message.split(": line ")[1].split(":")[0].split(", column "))
    assert text.splitlines()[line - 1][column - 1] in "[{"

