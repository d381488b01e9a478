"""The crash-loop nodes' report: `crashLoopNodes` in the plan's JSON, one notice per node and workload, and the gauge
series that come and go with them."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from remediator.strategies.remove_pods_having_too_many_restarts.report import (
    NONE_FOUND,
    CrashLoopNode,
    CrashLoopNodes,
    report_metrics,
)

WEB = CrashLoopNode("bad", "shop", "ReplicaSet/web", ("web-1", "web-2"), 3)
DB = CrashLoopNode("bad", "shop", "StatefulSet/db", ("db-0",), 2)


def test_its_json_notices_and_why() -> None:
    report = CrashLoopNodes((WEB,))
    assert report.json_key == "crashLoopNodes" and NONE_FOUND.to_json() == []
    assert report.to_json() == [{"node": "bad", "namespace": "shop", "owner": "ReplicaSet/web",
                                 "pods": ["web-1", "web-2"], "healthyElsewhere": 3}]
    (notice,) = report.notices()
    assert (notice.key, notice.node, notice.kind, notice.reason) == (
        ("bad", "shop", "ReplicaSet/web"), "bad", "CrashLoopNode", "NodemedicCrashLoopNode")
    assert notice.message == "2 pod(s) of shop/ReplicaSet/web restart on bad while 3 on other nodes are healthy"
    assert dict(notice.details) == {"namespace": "shop", "owner": "ReplicaSet/web", "pods": "web-1,web-2"}
    assert report.nominations() == () and report.why("bad") == ()


def test_a_series_per_crash_loop_gone_with_it() -> None:
    registry = CollectorRegistry()
    show = report_metrics(registry)

    def value(owner: str) -> float | None:
        return registry.get_sample_value("nodemedic_crash_loop_node",
                                         {"node": "bad", "namespace": "shop", "owner": owner})
    show(CrashLoopNodes((WEB, DB)))
    assert (value("ReplicaSet/web"), value("StatefulSet/db")) == (2.0, 1.0)
    show(CrashLoopNodes((DB,)))
    assert (value("ReplicaSet/web"), value("StatefulSet/db")) == (None, 1.0)
    show(NONE_FOUND)
    assert value("StatefulSet/db") is None
