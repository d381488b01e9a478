"""hack/bench/repair.py: the policies it runs nodemedic with, and the summary table it prints from the moments seen."""

from __future__ import annotations

import pytest

from hack.bench import repair
from hack.bench.lib import replace
from remediator.policy.loader import parse_policy
from remediator.strategies import CATALOG


def replace_run(moments: dict[str, float]) -> replace.ReplaceRun:
    return replace.ReplaceRun(series="s", node="n", claim="c", moments=moments)


@pytest.mark.parametrize("text", [repair.REAL_NODE_POLICY, repair.replace_policy()], ids=["real node", "replace"])
def test_the_policies_the_benchmark_runs_are_valid(text: str) -> None:
    parse_policy(text, source="bench", catalog=CATALOG)


def test_the_replace_policy_puts_the_ladder_on_the_rule_for_the_condition_both_act_on() -> None:
    policy = parse_policy(repair.replace_policy(), source="bench", catalog=CATALOG)
    (rule,) = [r for r in policy.rules if r.condition_type == "KWOKUnhealthy"]
    assert [str(step.action) for step in rule.repair] == ["replace", "person"]
    assert rule.evict


def test_a_median_counts_only_the_runs_that_saw_the_moment_and_says_so() -> None:
    runs = [replace_run({replace.GONE: 10.0}), replace_run({replace.GONE: 14.0}), replace_run({})]
    assert repair.median_at(runs, replace.GONE) == 12.0
    assert repair.median_cell(runs, replace.GONE) == "12.0 s (2 of 3 runs)"
    assert repair.median_cell(runs, replace.ADDED) == "-"


def test_the_ratio_is_printed_only_for_pods_elsewhere_and_old_node_gone() -> None:
    ours = [replace_run({replace.TAINTED: 2.0, replace.ELSEWHERE: 5.0, replace.GONE: 10.0})]
    theirs = [replace_run({replace.TAINTED: 30.0, replace.ELSEWHERE: 40.0, replace.GONE: 50.0})]
    rows = {row[0].strip(): row for row in repair.karpenter_rows({"nodemedic": ours, "karpenter-repair": theirs})}
    assert rows[replace.ELSEWHERE][1:] == ("5.0 s", "-", "40.0 s", "0.12")
    assert rows[replace.GONE][4] == "0.20"
    assert rows["node tainted (nodemedic's / karpenter.sh/disrupted)"][4] == ""


def test_a_series_that_did_not_run_leaves_its_column_and_the_ratio_empty() -> None:
    ours = [replace_run({replace.GONE: 10.0})]
    rows = {row[0].strip(): row for row in repair.karpenter_rows({"nodemedic": ours})}
    assert rows[replace.GONE][1:] == ("10.0 s", "-", "-", "")


def test_the_real_node_rows_say_kubernetes_alone_never_came_back_and_karpenter_is_documented() -> None:
    result = repair.RealNodeResult(
        repaired={repair.UNHEALTHY: 38.0, repair.DONE: 44.0, repair.READY: 44.5},
        alone={repair.UNHEALTHY: 35.0, repair.NOT_READY: 36.0}, alone_not_ready_status="Unknown",
        alone_status="Unknown", window=180.0)
    rows = {row[0].strip(): row for row in repair.real_node_rows(result)}
    assert rows[repair.READY][1:4] == ("44.5 s", "not in 180 s", ">= 1800 s, documented *")
    assert rows[repair.NOT_READY][1:3] == ("never", "36.0 s (Ready=Unknown)")
    assert rows[repair.TAINTED][2] == "-"


def test_the_summary_is_one_table_with_a_line_per_row_and_a_header() -> None:
    result = repair.RealNodeResult(window=60.0)
    lines = repair.summary(result, {"nodemedic": [replace_run({})], "karpenter-repair": [replace_run({})]})
    assert lines[0].split() == ["seconds", "after", "the", "fault", "nodemedic", "Kubernetes", "alone", "Karpenter",
                                "repair", "nodemedic", "/", "Karpenter"]
    assert len(lines) == 1 + len(repair.real_node_rows(result)) + 1 + len(repair.REPLACE_ROWS)
