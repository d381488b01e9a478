"""Fuzz: a policy's `scheduler` section, mutated from the full test policy's and from hostile values, and any policy
file name: the section is refused with ConfigError naming file and line, or `scheduler-config` prints a configuration
that reads back as YAML with exactly the section's values, each one kube-scheduler and the API server take, and the
name kept inside the header comment."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from nodemedic_common.config_errors import ConfigError
from remediator.peer_config.scheduler_config import Connection, render
from remediator.policy.loader import parse_policy
from remediator.strategies import CATALOG
from tests.unit.fuzz.strategies import EDGE_NUMBERS, EDGE_STRINGS, FUZZ, mutated

ROOT = Path(__file__).resolve().parents[3]
FULL = yaml.safe_load((ROOT / "tests/testdata/policies/good/full.yaml").read_text())
HOSTILE = ["a..b-", "x-", "٣٣", "zone\n\"evil\": 1", "Example.com/zone", "a/", "/a", "a" * 254, "a" * 64,
           "example.com/" + "a" * 63, "default-scheduler", "nodemedic-packing"]
SEEDS = [
    FULL["scheduler"],
    {"profile": "x", "packingProfile": "", "otherSchedulers": ["y"], "defaultConstraints": [
        {"maxSkew": 2**31 - 1, "topologyKey": "example.com/Zone_1.x", "whenUnsatisfiable": "DoNotSchedule"}]},
]
SOURCE = "fuzz/policy.yaml"
# Oracles written apart from the product's checks (remediator/policy/syntax.py), as Kubernetes states them.
DNS_SUBDOMAIN = re.compile(r"(?=.{1,253}\Z)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
LABEL_KEY = re.compile(r"((?=[^/]{1,253}/)([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]*[a-z0-9])?/)?"
                       r"(?=.{1,63}\Z)[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?\Z")
values = st.one_of(st.sampled_from(HOSTILE), st.sampled_from(EDGE_STRINGS), st.sampled_from(EDGE_NUMBERS),
                   st.text(max_size=12))


@st.composite
def sections(draw: st.DrawFn) -> dict[str, Any]:
    scheduler = draw(st.sampled_from(SEEDS).flatmap(mutated))
    if isinstance(scheduler, dict) and draw(st.booleans()):  # a hostile value where a name or a number goes
        constraints = scheduler.get("defaultConstraints")
        if isinstance(constraints, list) and constraints and isinstance(constraints[0], dict) and draw(st.booleans()):
            constraints[0][draw(st.sampled_from(["maxSkew", "topologyKey"]))] = draw(values)
        else:
            scheduler[draw(st.sampled_from(["profile", "packingProfile"]))] = draw(values)
    return {"apiVersion": "nodemedic.io/v1alpha1", "kind": "RemediationPolicy", "rules": [], "scheduler": scheduler}


# Each example reads a whole policy and renders and re-reads a configuration (~10 ms): 800 of them keep this test
# near 10 s of CPU, within the suite's budget.
@settings(FUZZ, max_examples=min(FUZZ.max_examples, 800))
@given(doc=sections(), name=st.one_of(st.text(max_size=16), st.sampled_from(["p\nevil: 1.yaml", "b\udcff.yaml"])))
def test_an_accepted_scheduler_section_prints_a_configuration_kube_scheduler_takes(doc: dict[str, Any],
                                                                                  name: str) -> None:
    try:
        text = yaml.safe_dump(doc, sort_keys=False)
    except yaml.YAMLError:
        return  # a value PyYAML cannot write (a lone surrogate): no policy file holds it
    try:
        policy = parse_policy(text, source=SOURCE, catalog=CATALOG)
    except ConfigError as e:
        for message in e.errors:
            where, line, _ = message.split(":", 2)
            assert where == SOURCE and line.isdigit(), message
        return
    config = render(policy, name, Connection(leader_elect=False))
    config.encode("utf-8")  # what is written to the file kube-scheduler reads: strict UTF-8
    header = config.split("\napiVersion:")[0].splitlines()
    assert header and all(line.startswith("# ") for line in header), header
    read = yaml.safe_load(config)
    assert set(read) == {"apiVersion", "kind", "leaderElection", "profiles"}
    s = policy.scheduler
    names = [p["schedulerName"] for p in read["profiles"]]
    assert names == list(dict.fromkeys([s.profile, *([s.packing_profile] if s.packing_profile else [])]))
    for scheduler_name in [*names, *s.other_schedulers]:
        assert DNS_SUBDOMAIN.match(scheduler_name), scheduler_name
    constraints = read["profiles"][0]["pluginConfig"][0]["args"]["defaultConstraints"]
    assert [(c["maxSkew"], c["topologyKey"], c["whenUnsatisfiable"]) for c in constraints] == [
        (c.max_skew, c.topology_key, c.when_unsatisfiable) for c in s.default_constraints]
    for c in constraints:
        assert 1 <= c["maxSkew"] <= 2**31 - 1 and LABEL_KEY.match(c["topologyKey"]), c
