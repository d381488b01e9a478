"""Fuzz: an agent config, mutated from the shipped one and from one per built-in check that gives it every field,
either loads, with every check's settings within their declared bounds, or is refused with ConfigError naming the
file and line of each problem."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st

from agent.bounds import camel_case, field_problems
from agent.checks import BUILTIN
from agent.config import parse_config
from nodemedic_common.config_errors import ConfigError
from nodemedic_common.durations import format_duration
from tests.unit.fuzz.strategies import FUZZ, mutated

ROOT = Path(__file__).resolve().parents[3]
SOURCE = "fuzz/agent.yaml"


def _written(value: Any) -> Any:
    """A default as a user would write it in the file."""
    if isinstance(value, dt.timedelta):
        return format_duration(value)
    if isinstance(value, tuple):
        return [_written(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {camel_case(f.name): _written(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return value


def _every_field(config: Any) -> dict[str, Any]:
    written = _written(config)
    timing = written.pop("timing", {})
    return {**written, **timing}  # `interval` and `timeout` sit at the check's level


# One seed per check (a file of every check's every field parses ~20 times slower, for no other input reached).
SEEDS = [{"checks": {name: _every_field(spec.config_type())}} for name, spec in BUILTIN.items()]
SEEDS.append(yaml.safe_load((ROOT / "deploy/agent/default.yaml").read_text()))


def _dump(doc: Any) -> str:
    try:
        return yaml.safe_dump(doc, sort_keys=False)
    except yaml.YAMLError:
        return json.dumps(doc)  # a key PyYAML cannot write; JSON is YAML too


def test_the_seeds_load() -> None:
    for seed in SEEDS:
        config = parse_config(_dump(seed), source=SOURCE, registry=BUILTIN)
        assert config.checks


@FUZZ
@given(text=st.sampled_from(SEEDS).flatmap(mutated).map(_dump))
def test_a_mutated_agent_config_loads_within_its_bounds_or_is_refused_with_file_and_line(text: str) -> None:
    try:
        config = parse_config(text, source=SOURCE, registry=BUILTIN)
    except ConfigError as e:
        assert e.errors, "refused without a reason"
        for message in e.errors:
            where, line, _ = message.split(":", 2)
            assert where == SOURCE and line.isdigit(), message
        return
    for check in config.checks.values():
        assert field_problems(check) == []
