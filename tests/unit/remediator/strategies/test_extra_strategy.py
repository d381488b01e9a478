"""The strategy contract is closed: a strategy written in a folder of its own (here a temporary package, outside the
product's tree) and put in the registry gets its report into the plan's JSON (`/plan`, `plan --json`), its gauge into
`/metrics`, its sentences into `why NODE` and its notices into Events, with no line of the planner, the controller,
`why`, the server or the plan changed for it."""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from nodemedic_common.http_server import BoundedServer
from remediator.cli import main
from remediator.read_side.server import routes
from remediator.read_side.status_answer import StatusAnswer
from remediator.strategies import STRATEGIES
from tests.unit.remediator.control.test_controller import PODS, World, node

NAME = "CountPodsPerNode"
# The strategy's folder: its args (none), its plan, its report with the report's JSON, gauge, `why` and notices.
FOLDER = {
    "__init__.py": """
        from remediator.strategies.strategy import Strategy

        from count_pods_per_node.plan import plan, read_args
        from count_pods_per_node.report import report_metrics

        STRATEGY = Strategy("CountPodsPerNode", "deschedule", read_args, plan, report_metrics=report_metrics)
    """,
    "plan.py": """
        from remediator.state.snapshot import Snapshot
        from remediator.planning.gate import Gate
        from remediator.planning.wants import Wants
        from remediator.policy.reader import Reader, Section

        from count_pods_per_node.report import PodsPerNode


        def read_args(r: Reader, strategy: Section) -> None:
            r.section(strategy, "args", ())


        def plan(snapshot: Snapshot, args: None, gate: Gate, /) -> Wants:
            return Wants(report=PodsPerNode(tuple((n, len(snapshot.pods(n))) for n in sorted(snapshot.nodes))))
    """,
    "report.py": """
        from collections.abc import Callable, Sequence
        from dataclasses import dataclass

        from prometheus_client import CollectorRegistry, Gauge

        from remediator.model.migration import Gain
        from remediator.model.plan import NodeNotice, Nomination, StrategyReport


        @dataclass(frozen=True)
        class PodsPerNode:
            counts: tuple[tuple[str, int], ...]

            @property
            def json_key(self) -> str:
                return "podsPerNode"

            def to_json(self) -> object:
                return dict(self.counts)

            def why(self, node: str) -> Sequence[str]:
                return [f"{n} pod(s) counted here" for name, n in self.counts if name == node]

            def notices(self) -> Sequence[NodeNotice]:
                return [NodeNotice((name,), name, "PodsCounted", "NodemedicPodsCounted", f"{n} pod(s) on {name}")
                        for name, n in self.counts if n >= 2]

            def nominations(self) -> Sequence[Nomination]:
                return ()

            def gain(self) -> Gain | None:
                return None


        def report_metrics(registry: CollectorRegistry) -> Callable[[StrategyReport], None]:
            gauge = Gauge("nodemedic_test_pods_per_node", "Pods counted per node", ["node"], registry=registry)

            def show(report: StrategyReport) -> None:
                assert isinstance(report, PodsPerNode)
                for name, n in report.counts:
                    gauge.labels(name).set(n)
            return show
    """,
}
POLICY = """\
apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
strategies:
- name: CountPodsPerNode
"""
SNAPSHOT = Path(__file__).parents[3] / "testdata" / "snapshots" / "deschedule-strategies.json"


@pytest.fixture
def registered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The strategy's folder written as a package of its own, and its one line in the registry."""
    folder = tmp_path / "count_pods_per_node"
    folder.mkdir()
    for name, text in FOLDER.items():
        (folder / name).write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(STRATEGIES, NAME, importlib.import_module("count_pods_per_node").STRATEGY)
    yield
    for module in [m for m in sys.modules if m.split(".")[0] == "count_pods_per_node"]:
        del sys.modules[module]


def served(world: World, *paths: str) -> list[str]:
    """The bodies of GET `paths` from the remediator's server, fed by the world's controller and registry."""
    served_routes = routes(registry=world.registry, healthy=lambda: (True, "ok"), plan=lambda: world.controller.plan,
                           status=lambda: StatusAnswer("r1", True, False, "deployment", "0", "p.yaml", "0" * 12),
                           why=world.controller.why)

    async def go() -> list[str]:
        server = BoundedServer(served_routes)
        await server.start("127.0.0.1:0")
        try:
            port = server.port
            async with aiohttp.ClientSession() as session:
                bodies = []
                for path in paths:
                    async with session.get(f"http://127.0.0.1:{port}{path}") as r:
                        assert r.status == 200, path
                        bodies.append(await r.text())
                return bodies
        finally:
            await server.close()

    return asyncio.run(go())


@pytest.mark.usefixtures("registered")
def test_a_strategy_from_its_own_folder_reaches_plan_metrics_why_and_events(tmp_path: Path) -> None:
    world = World(tmp_path, nodes=[node("sick", sick=True), node("well")], pods=PODS, policy=POLICY)
    world.cycle()
    plan, metrics, why = served(world, "/plan", "/metrics", "/why/sick")
    assert json.loads(plan)["podsPerNode"] == {"sick": 2, "well": 1}
    assert 'nodemedic_test_pods_per_node{node="sick"} 2.0' in metrics.splitlines()
    assert 'nodemedic_test_pods_per_node{node="well"} 1.0' in metrics.splitlines()
    facts: list[dict[str, Any]] = json.loads(why)["facts"]
    assert {"topic": "strategy", "sentence": "CountPodsPerNode: 2 pod(s) counted here"} in facts
    assert [(e["reason"], e["involvedObject"]["name"]) for e in world.api.events
            if e["reason"] == "NodemedicPodsCounted"] == [("NodemedicPodsCounted", "sick")]
    world.cycle()  # a notice is told once while it lasts
    assert [e["reason"] for e in world.api.events].count("NodemedicPodsCounted") == 1


@pytest.mark.usefixtures("registered")
def test_plan_json_shows_the_strategys_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    doc = json.loads(SNAPSHOT.read_text())
    assert main(["plan", "--snapshot", str(SNAPSHOT), "--policy", str(policy), "--now", "2026-06-01T12:00:00Z",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    nodes = {item["metadata"]["name"] for item in doc["items"] if item.get("kind") == "Node"}
    assert set(out["podsPerNode"]) == nodes and sum(out["podsPerNode"].values()) > 0
