"""`live_cluster`: what `plan --kubeconfig` reads, once, from a fake API server over real HTTP: the five lists, in
pages, read into the snapshot's records (each item by its list's kind), measured usage only when the policy asks,
the node autoscalers found (and why one could not be looked for); and `list_items` refusing an answer that is not a
Kubernetes list, naming where."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from nodemedic_common.kube_errors import ApiError
from remediator.policy.measured_usage import KUBERNETES_METRICS, MetricsProviders, MetricsUtilization
from remediator.policy.model import Policy, StrategyConfig
from remediator.state.live_cluster import LiveCluster, list_items, read_live_cluster
from remediator.state.measured.resource_metrics_api import NODES as NODE_METRICS
from remediator.state.measured.resource_metrics_api import PODS as POD_METRICS
from remediator.state.snapshot import NodeAutoscaler
from remediator.strategies.low_node_utilization.args import LowNodeUtilizationArgs

NOW = dt.datetime(2026, 5, 1, 12, 0, tzinfo=dt.UTC)
LISTS: dict[str, list[dict[str, Any]]] = {
    "/api/v1/nodes": [{"metadata": {"name": "n1"}}, {"metadata": {"name": "n2"}}],
    "/api/v1/pods": [{"metadata": {"name": "p", "namespace": "shop"}}],
    "/apis/policy/v1/poddisruptionbudgets": [],
    "/apis/scheduling.k8s.io/v1/priorityclasses": [{"metadata": {"name": "high"}, "value": 1000}],
    "/api/v1/persistentvolumeclaims": [{"metadata": {"name": "data", "namespace": "shop"}}],
}


def _kubeconfig(tmp_path: Path, base: str) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(f"apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: '{base}'}}}}]\n"
                    "users: [{name: u, user: {}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
                    "current-context: x\n")
    return str(path)


def _read(tmp_path: Path, routes: dict[str, Any], policy: Policy, *, detect: bool) -> tuple[LiveCluster, list[str]]:
    asked: list[str] = []

    def handler(answer: Any) -> Any:
        if callable(answer):
            async def called(request: web.Request) -> web.StreamResponse:
                asked.append(request.path)
                return await answer(request)  # type: ignore[no-any-return]
            return called

        async def handle(request: web.Request) -> web.StreamResponse:
            asked.append(request.path)
            if isinstance(answer, int):
                return web.Response(status=answer, text='{"kind":"Status","message":"broken"}')
            return web.json_response(answer)
        return handle

    async def scenario() -> LiveCluster:
        application = web.Application()
        for path, answer in routes.items():
            application.router.add_get(path, handler(answer))
        runner = web.AppRunner(application)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        try:
            base = f"http://127.0.0.1:{runner.addresses[0][1]}"
            return await asyncio.wait_for(read_live_cluster(
                _kubeconfig(tmp_path, base), policy, NOW, str(tmp_path), detect_autoscalers=detect), 20)
        finally:
            await runner.cleanup()

    return asyncio.run(scenario()), asked


def _lists() -> dict[str, Any]:
    return {path: {"kind": "List", "items": [dict(i) for i in items]} for path, items in LISTS.items()}


def test_the_cluster_is_read_into_the_snapshots_records_each_item_by_the_kind_of_its_list(tmp_path: Path) -> None:
    live, asked = _read(tmp_path, _lists(), Policy(), detect=False)
    snapshot = live.parts.snapshot(NOW)
    assert list(snapshot.nodes) == ["n1", "n2"]
    assert [p.key for p in snapshot.pending] == ["shop/p"]
    assert (snapshot.priority_classes, snapshot.claim_classes, snapshot.pdbs) == ({"high": 1000}, {"shop/data": ""}, [])
    assert (live.measured.nodes, live.measured.scores, live.autoscalers, live.unanswered) == ({}, {}, frozenset(), [])
    assert sorted(asked) == sorted(LISTS)  # read at once; nothing else: no metrics, no autoscaler probes


def test_the_lists_are_read_in_pages_following_their_continue_tokens(tmp_path: Path) -> None:
    pods = [{"metadata": {"name": f"p{i}", "namespace": "shop"}, "spec": {"nodeName": "n1"}} for i in range(3)]
    pages = {"": {"metadata": {"continue": "c1"}, "items": pods[:2]}, "c1": {"metadata": {}, "items": pods[2:]}}
    queries: list[dict[str, str]] = []

    async def paged(request: web.Request) -> web.StreamResponse:
        queries.append(dict(request.query))
        return web.json_response(pages[request.query.get("continue", "")])

    routes = {**_lists(), "/api/v1/pods": paged}
    live, _ = _read(tmp_path, routes, Policy(), detect=False)
    assert [p.name for p in live.parts.snapshot(NOW).pods_by_node["n1"]] == ["p0", "p1", "p2"]
    assert queries == [{"limit": "500"}, {"limit": "500", "continue": "c1"}]


def test_autoscalers_found_are_kept_and_a_probe_without_an_answer_is_said_why(tmp_path: Path) -> None:
    lease = {"metadata": {"name": "karpenter-leader-election", "namespace": "kube-system"},
             "spec": {"holderIdentity": "karpenter-1", "renewTime": "2026-05-01T11:59:58.000000Z"}}
    routes = {**_lists(), "/apis/karpenter.sh/v1": {"kind": "APIResourceList", "resources": [{"name": "nodepools"}]},
              "/apis/coordination.k8s.io/v1/leases": {"kind": "LeaseList", "items": [lease]},
              "/api/v1/namespaces/kube-system/configmaps/cluster-autoscaler-status": 500}
    live, _ = _read(tmp_path, routes, Policy(), detect=True)
    assert live.autoscalers == frozenset({NodeAutoscaler.KARPENTER})
    (why,) = live.unanswered
    assert why.startswith("cluster-autoscaler: ") and "500" in why


def test_an_autoscaler_the_api_does_not_serve_is_simply_not_found(tmp_path: Path) -> None:
    live, _ = _read(tmp_path, _lists(), Policy(), detect=True)  # both probes answered 404
    assert live.autoscalers == frozenset() and live.unanswered == []


def test_measured_usage_is_read_for_the_nodes_listed_when_the_policy_asks(tmp_path: Path) -> None:
    policy = Policy(strategies=(StrategyConfig("LowNodeUtilization", LowNodeUtilizationArgs(
        thresholds=(("cpu", 20.0),), target_thresholds=(("cpu", 50.0),),
        metrics_utilization=MetricsUtilization(KUBERNETES_METRICS))),), metrics=MetricsProviders(kubernetes=True))
    sample = {"metadata": {"name": "n1"}, "timestamp": "2026-05-01T11:59:50Z", "window": "10s",
              "usage": {"cpu": "250m", "memory": "1Mi"}}
    routes = {**_lists(), NODE_METRICS: {"items": [sample]}, POD_METRICS: {"items": []}}
    live, _ = _read(tmp_path, routes, policy, detect=False)
    assert live.measured.nodes == {"n1": {"cpu": 250, "memory": 1 << 20}}


def test_a_list_the_api_server_refuses_raises_its_api_error(tmp_path: Path) -> None:
    routes = {**_lists(), "/api/v1/pods": 403}
    with pytest.raises(ApiError) as caught:
        _read(tmp_path, routes, Policy(), detect=False)
    assert caught.value.status == 403


def test_list_items_gives_the_items_and_an_absent_or_null_items_is_empty() -> None:
    assert list_items({"items": [{"a": 1}]}, "/p") == [{"a": 1}]
    assert list_items({"items": None}, "/p") == []
    assert list_items({}, "/p") == []


@pytest.mark.parametrize(("answer", "message"), [
    ([], "GET /p: not a Kubernetes list: the answer is a list, not an object"),
    ("<html>", "GET /p: not a Kubernetes list: the answer is a string, not an object"),
    ({"items": {"a": 1}}, "GET /p: not a Kubernetes list: items is an object, not a list"),
    ({"items": [{}, 3]}, "GET /p: not a Kubernetes list: items[1] is a number, not an object"),
    ({"items": [None]}, "GET /p: not a Kubernetes list: items[0] is null, not an object"),
])
def test_an_answer_that_is_not_a_kubernetes_list_is_refused_naming_the_path_and_field(
        answer: object, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        list_items(answer, "/p")
    assert str(caught.value) == message
