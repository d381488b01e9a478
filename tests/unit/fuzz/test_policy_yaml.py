"""Fuzz: a policy file, mutated from the shipped and test policies (as data and as text), either loads or is refused
with ConfigError naming the file and line; a policy that loads plans a small cluster without raising."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st

from nodemedic_common.config_errors import ConfigError
from remediator.control.planner import PlannerMemory, make_plan
from remediator.policy.loader import parse_policy
from remediator.read_side.plan_answer import PlanAnswer
from remediator.state.caches import snapshot_from_list
from remediator.strategies import CATALOG
from tests.unit.fuzz.seeds import CLUSTER, NOW
from tests.unit.fuzz.strategies import EDGE_STRINGS, FUZZ, mutated

ROOT = Path(__file__).resolve().parents[3]
FILES = [ROOT / "deploy/policy/default.yaml", *sorted((ROOT / "tests/testdata/policies").glob("*/*.yaml"))]
TEXTS = [p.read_text() for p in FILES]


def _data(text: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return None  # a bad test policy that is bad by its syntax: a seed for the text mutations only


DOCS = [d for d in map(_data, TEXTS) if isinstance(d, dict)]
SOURCE = "fuzz/policy.yaml"
SNAPSHOT = snapshot_from_list(CLUSTER, NOW)


def _dump(doc: Any) -> str:
    try:
        return yaml.safe_dump(doc, sort_keys=False)
    except yaml.YAMLError:
        return json.dumps(doc)  # a key PyYAML cannot write; JSON is YAML too


@st.composite
def spliced(draw: st.DrawFn) -> str:
    """A policy file's text with a few characters inserted, deleted or replaced: YAML syntax and line numbers."""
    text = draw(st.sampled_from(TEXTS))
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(text)))
        cut = draw(st.integers(0, 3))
        text = text[:at] + draw(st.one_of(st.sampled_from([*EDGE_STRINGS, ":", "- ", "\n  ", "{", "[", "&a", "*a",
                                                           "!!python/object:os.system", "\t", "'", '"', "#"]),
                                          st.text(max_size=4))) + text[at + cut:]
    return text


@FUZZ
@given(text=st.one_of(st.sampled_from(DOCS).flatmap(mutated).map(_dump), spliced()))
def test_a_mutated_policy_loads_or_is_refused_with_file_and_line_and_a_loaded_one_plans(text: str) -> None:
    try:
        policy = parse_policy(text, source=SOURCE, catalog=CATALOG)
    except ConfigError as e:
        assert e.errors, "refused without a reason"
        for message in e.errors:
            where, line, _ = message.split(":", 2)
            assert where == SOURCE and line.isdigit(), message
        return
    plan = make_plan(SNAPSHOT, policy, PlannerMemory())
    json.dumps(PlanAnswer.of(plan).to_json(), allow_nan=False)  # what `plan --json` prints
