"""The balancing engine's report: `resourceMix` in the plan's JSON (rounded) and its gauge before and after."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from remediator.strategies.balance_resource_mix.report import ResourceMix, report_metrics


def test_its_json_and_gauge() -> None:
    mix = ResourceMix(before=64.3751, after=0.6249, nodes=2)
    assert mix.json_key == "resourceMix"
    assert mix.to_json() == {"deviationBefore": 64.38, "deviationAfter": 0.62, "nodes": 2}
    assert mix.notices() == () and mix.nominations() == () and mix.why("A") == ()
    registry = CollectorRegistry()
    report_metrics(registry)(mix)
    assert registry.get_sample_value("nodemedic_resource_mix_deviation", {"when": "before"}) == 64.3751
    assert registry.get_sample_value("nodemedic_resource_mix_deviation", {"when": "after"}) == 0.6249
