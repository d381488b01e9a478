"""`nodemedic-remediator plan`'s text: one line per action, with the cluster's text escaped for the terminal."""

from __future__ import annotations

from remediator.model.plan import Plan, PlannedEviction, Protected
from remediator.read_side.plan_text import plan_lines
from tests.unit.remediator.strategies.cluster import pod

ESC = "\x1b]52;c;ZXZpbA==\x07\x1b[2J"


def test_each_action_is_a_line_and_the_breaker_is_last() -> None:
    victim = pod("web-1", "n1")
    plan = Plan(evictions=[PlannedEviction(victim, "RemoveDuplicates", "a duplicate")], tainted_limit=2,
                protected=[Protected(pod("db-0", "n1"), "a PDB allows no disruption")])
    assert plan_lines(plan) == [
        f"evict      namespace={victim.namespace}  name=web-1  node=n1  strategy=RemoveDuplicates  reason=a duplicate",
        f"protected  namespace={victim.namespace}  name=db-0  node=n1  why=a PDB allows no disruption",
        "breaker: open=False taintedLimit=2"]


def test_control_characters_from_the_cluster_are_escaped() -> None:
    plan = Plan(evictions=[PlannedEviction(pod("web" + ESC, "n1\r"), "s", "owner ReplicaSet/x\n" + ESC)])
    line = plan_lines(plan)[0]
    assert "\x1b" not in line and "\r" not in line and "\n" not in line and "\x07" not in line
    assert "name=web\\x1b]52;c;ZXZpbA==\\x07\\x1b[2J  node=n1\\r" in line
