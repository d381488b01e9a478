"""`kubectl nodemedic` against a fake API server over real HTTP: it finds the leader from the remediator pods' args and
the Lease, reads /status, /plan and /why/NODE through the pod proxy, and words them; what it cannot find, it says."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import json
from pathlib import Path
from typing import Any

from aiohttp import web
from prometheus_client import CollectorRegistry

from nodemedic_common.kube_client import Kube
from nodemedic_common.kube_credentials import Credentials
from remediator import __version__
from remediator.control.planner import PlannerMemory, make_plan
from remediator.kubectl import cli, reach, render
from remediator.model.records import Condition
from remediator.planning.owned_taints import OwnedTaint, render_owned
from remediator.policy.model import OWNED_TAINTS_ANNOTATION
from remediator.read_side.plan_answer import PlanAnswer
from remediator.read_side.status_answer import StatusAnswer
from remediator.read_side.why import why
from remediator.read_side.why_answer import WhyAnswer
from tests.unit.remediator.read_side.test_why import POLICY, TAINT
from tests.unit.remediator.strategies.cluster import NOW, node, snapshot

NS, LEADER = "ops", "nm-remediator-7d9f-abcde"
STATUS = StatusAnswer("nm-7d9f_1a2b3c4d", leading=True, dry_run=False, mode="deployment", version=__version__,
                      policy_file="/etc/nodemedic/policy.yaml", policy_sha256="0123456789ab")
DEADLOCK = {"type": "KernelDeadlock", "status": "True", "lastTransitionTime": "2024-05-01T11:00:00Z",
            "reason": "TaskHung", "message": "task jbd2 blocked for more than 120 seconds"}


def cluster() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(the nodes as the API lists them, the leader's /plan, its /why for sick-1), from one real plan."""
    sick = dataclasses.replace(node("sick-1"), conditions=(
        Condition("Ready", "True"), Condition("KernelDeadlock", "True", NOW - dt.timedelta(hours=1), "TaskHung", "")))
    s = snapshot([sick, node("well-1")], [])
    plan = make_plan(s, POLICY, PlannerMemory())
    owned = render_owned([OwnedTaint(TAINT, ("kernel-deadlock",), "KernelDeadlock=True for 5m0s", NOW)])
    nodes = {"items": [
        {"metadata": {"name": "sick-1", "annotations": {OWNED_TAINTS_ANNOTATION: owned}},
         "spec": {"taints": [{"key": TAINT.key, "value": "true", "effect": "NoSchedule"}]},
         "status": {"conditions": [{"type": "Ready", "status": "True"}, DEADLOCK]}},
        {"metadata": {"name": "well-1"}, "spec": {}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}]}
    return nodes, PlanAnswer.of(plan).to_json(), WhyAnswer.of("sick-1", NOW, why("sick-1", s, POLICY, plan)).to_json()


def api(*, args: list[str], holder: str = f"{LEADER}_1a2b3c4d", proxy_status: int = 200) -> web.Application:
    nodes, plan, why_doc = cluster()
    remediator = {"metadata": {"name": LEADER}, "spec": {"containers": [{"name": "remediator", "args": args}]}}
    agent = {"metadata": {"name": "nm-agent-x1"}, "status": {"phase": "Running"}}
    answers = {"/status": {"identity": holder, "leading": True, "dryRun": False, "mode": "deployment",
                           "version": __version__,
                           "policy": {"file": "/etc/nodemedic/policy.yaml", "sha256": "0123456789ab"}},
               "/plan": plan, "/why/sick-1": why_doc}

    async def pods(request: web.Request) -> web.Response:
        selector = request.query.get("labelSelector", "")
        if selector.endswith("remediator"):
            return web.json_response({"items": [remediator]})
        assert request.query.get("fieldSelector") == "spec.nodeName=sick-1"
        return web.json_response({"items": [agent]})

    async def lease(request: web.Request) -> web.Response:
        assert request.match_info["name"] == "nm-remediator"
        return web.json_response({"spec": {"holderIdentity": holder, "renewTime": "2024-05-01T11:59:58.000000Z"}})

    async def proxy(request: web.Request) -> web.Response:
        assert request.match_info["pod"] == f"{LEADER}:8080", request.match_info["pod"]
        if proxy_status != 200:
            return web.json_response({"kind": "Status", "message": "pods/proxy is forbidden"}, status=proxy_status)
        return web.json_response(answers["/" + request.match_info["tail"]])

    async def all_nodes(_: web.Request) -> web.Response:
        return web.json_response(nodes)

    async def one_node(request: web.Request) -> web.Response:
        found = [n for n in nodes["items"] if n["metadata"]["name"] == request.match_info["name"]]
        return web.json_response(found[0]) if found else web.json_response({"message": "not found"}, status=404)

    a = web.Application()
    a.router.add_get(f"/api/v1/namespaces/{NS}/pods", pods)
    a.router.add_get(f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/{{name}}", lease)
    a.router.add_get(f"/api/v1/namespaces/{NS}/pods/{{pod}}/proxy/{{tail:.*}}", proxy)
    a.router.add_get("/api/v1/nodes", all_nodes)
    a.router.add_get("/api/v1/nodes/{name}", one_node)
    return a


ARGS = ["run", "--policy=/etc/nodemedic/policy.yaml", f"--lease-namespace={NS}", "--lease-name=nm-remediator",
        "--listen=:8080"]


def ask(argv: list[str], app: web.Application) -> str:
    args = cli.parser().parse_args(["-n", NS, *argv])

    async def go() -> str:
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        try:
            async with Kube(Credentials(f"http://127.0.0.1:{port}", False),
                            registry=CollectorRegistry()) as kube:
                return await cli.run(args, kube)
        finally:
            await runner.cleanup()

    return asyncio.run(go())


def fails(argv: list[str], app: web.Application) -> str:
    try:
        ask(argv, app)
    except cli.reach.NotFound as e:
        return str(e)
    raise AssertionError("no error")


def test_status_names_the_leader_policy_breaker_tainted_nodes_and_the_last_cycle() -> None:
    out = ask(["status"], api(args=ARGS)).splitlines()
    assert out[0] == f"leader      {LEADER} (Lease {NS}/nm-remediator, renewed 2024-05-01T11:59:58.000000Z)"
    assert out[1] == "policy      /etc/nodemedic/policy.yaml (sha256 0123456789ab)"
    assert out[2] == "mode        acting"
    assert out[3].startswith("breaker     closed: 1 of at most ")
    assert out[4] == "tainted nodes"
    assert out[6].split() == ["sick-1", "nodemedic.io/kernel-deadlock:NoSchedule", "2024-05-01T12:00:00Z",
                              "KernelDeadlock=True", "for", "5m0s", "(kernel-deadlock)"]
    assert out[7] == "repair      0 node(s) in repair"
    assert out[8].startswith("last cycle  0 eviction(s)")


def test_status_names_the_nodes_in_repair_and_those_handed_to_a_person() -> None:
    plan = PlanAnswer.read({"repair": {
        "start": [{"node": "n3", "rule": "r", "step": 1, "action": "restart", "id": "x", "cause": "c"}],
        "waiting": [{"node": "n1", "rule": "r", "step": "drain", "why": "w"},
                    {"node": "n2", "rule": "r", "step": "person", "why": "w"}],
        "needsAPerson": ["n2"], "halted": {"karpenter.sh/nodepool=gpu": "3 of 5 unhealthy"}}})
    leader = reach.Leader("ops", "nm-7d9f", "8080", "nm", "nm-7d9f", "2024-05-01T00:00:00Z")
    out = render.status(leader, STATUS, plan, []).splitlines()
    assert out[5] == ("repair      2 node(s) in repair; a person needed for n2; halted in "
                      "karpenter.sh/nodepool=gpu")


def test_status_and_plan_name_the_silent_nodes_and_what_is_fenced() -> None:
    plan = PlanAnswer.read({"darkNodes": {
        "nodes": [{"node": "n1", "seen": "dark", "why": "no evidence", "needsEvidence": True},
                  {"node": "n2", "seen": "kubelet-silent", "why": "its agent wrote"},
                  {"node": "n3", "seen": "dark", "why": "fenced now"}],
        "fence": [{"node": "n3", "evidence": "person", "detail": "confirmed off", "frees": ["shop/db-0"]}],
        "deleteNodeClaim": [], "unfence": [{"node": "n4", "why": "back", "taint": True}], "halted": {}}})
    leader = reach.Leader("ops", "nm-7d9f", "8080", "nm", "nm-7d9f", "2024-05-01T00:00:00Z")
    out = render.status(leader, STATUS, plan, []).splitlines()
    assert out[6] == ("silent      dark 2, kubelet-silent 1; evidence needed for n1 (kubectl nodemedic fence NODE "
                      "--confirm)")
    rows = [line.split(None, 3) for line in render.plan(plan).splitlines()[1:]]
    assert rows[:2] == [["fence", "person", "n3", "confirmed off"], ["unfence", "out-of-service", "n4", "back"]]
    assert rows[2:] == [["silent", "dark", "n1", "no evidence"], ["silent", "kubelet-silent", "n2", "its agent wrote"],
                        ["silent", "dark", "n3", "fenced now"]]


def test_why_prints_each_fact_with_when_it_changes() -> None:
    out = ask(["why", "sick-1"], api(args=ARGS))
    assert out.splitlines()[0] == "why sick-1 (as of 2024-05-01T12:00:00Z)"
    assert "rule        rule kernel-deadlock applies: KernelDeadlock=True for 59m59s" in out
    assert "plan        this cycle adds nodemedic.io/kernel-deadlock:NoSchedule" in out
    assert json.loads(ask(["why", "sick-1", "-o", "json"], api(args=ARGS)))["node"] == "sick-1"


def test_plan_as_a_table_and_as_json() -> None:
    table = ask(["plan"], api(args=ARGS)).splitlines()
    assert table[0].split() == ["ACTION", "WHAT", "NODE", "WHY"]
    assert table[1].split()[:3] == ["taint", "nodemedic.io/kernel-deadlock:NoSchedule", "sick-1"]
    assert json.loads(ask(["plan", "-o", "json"], api(args=ARGS)))["taints"]["add"][0]["node"] == "sick-1"


def test_plan_names_exposed_workloads_with_their_moves_and_scheduler_loops() -> None:
    doc = PlanAnswer.read({
        "zoneExposure": [{"namespace": "shop", "workload": "Deployment/d", "perZone": {"zone-a": 1, "zone-c": 3},
                          "surviving": 0.5, "best": 0.667, "moves": [{"from": "zone-c", "to": "zone-a", "pods": 1}]}],
        "schedulerLoops": [{"namespace": "shop", "owner": "ReplicaSet/e-1", "node": "n1",
                            "since": "2026-06-01T11:00:00Z", "until": "2026-06-01T13:00:00Z",
                            "note": "the scheduler disagrees with the policy"}]})
    rows = [line.split(None, 3) for line in render.plan(doc).splitlines()[1:]]
    assert rows == [["exposed", "shop/Deployment/d", "-", "50% survive its worst zone's loss; 67% after 1 from zone-c "
                                                          "to zone-a"],
                    ["loop", "shop/ReplicaSet/e-1", "n1", "the scheduler disagrees with the policy"]]


def test_check_shows_the_nodes_conditions_and_who_reported_each() -> None:
    out = ask(["check", "sick-1"], api(args=ARGS)).splitlines()
    assert out[0] == "sick-1: agent nm-agent-x1 is Running"
    assert out[2].split()[:4] == ["Ready", "True", "kubelet", ":"]
    assert out[3].split()[:5] == ["KernelDeadlock", "True", "2024-05-01T11:00:00Z", "agent", "TaskHung:"]


def test_what_cannot_be_reached_is_said_not_thrown() -> None:
    assert "runs as a CronJob" in fails(["status"], api(args=[*ARGS, "--once"]))
    assert "no --lease-name or --listen" in fails(["plan"], api(args=["run", "--policy=p.yaml"]))
    assert "has no holder" in fails(["plan"], api(args=ARGS, holder=""))
    assert "viewer role" in fails(["plan"], api(args=ARGS, proxy_status=403))
    assert fails(["check", "nope"], api(args=ARGS)) == "no node nope"


def test_main_exits_1_with_the_reason_when_the_api_server_does_not_answer(tmp_path: Path, capsys: Any) -> None:
    config = tmp_path / "kubeconfig"
    config.write_text("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n"
                      "users: [{name: u, user: {}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
                      "current-context: x\n")
    assert cli.main(["--kubeconfig", str(config), "-n", NS, "status"]) == 1
    assert capsys.readouterr().err.startswith(
        "kubectl nodemedic: the API server did not answer: GET /api/v1/namespaces/ops/pods")


