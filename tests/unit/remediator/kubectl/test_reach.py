"""The plugin's reads through the API server, against a fake one over real HTTP: the Lease's holder is used only
when it is one of the remediator pods found, names are checked before they become a path, the leader's answer is
read to a bound, and a failure names its hop (the API server, its pod proxy, the leader)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from nodemedic_common.kube_errors import ApiError
from remediator import __version__
from remediator.kubectl import cli, hops, names, reach

NS, LEADER = "ops", "nm-remediator-7d9f-abcde"
ARGS = ["run", f"--lease-namespace={NS}", "--lease-name=nm", "--listen=:8080"]
STATUS = {"identity": f"{LEADER}_1a2b3c4d", "leading": True, "dryRun": False, "mode": "deployment",
          "version": __version__, "policy": {"file": "/p.yaml", "sha256": "0123456789ab"}}
Proxy = Callable[[web.Request], Awaitable[web.StreamResponse]]


async def plan_answer(_: web.Request) -> web.StreamResponse:
    return web.json_response({"evictions": []})


class FakeApi:
    def __init__(self, *, holder: str = f"{LEADER}_1a2b3c4d", args: list[str] = ARGS,
                 proxy: Proxy = plan_answer) -> None:
        self.holder, self.args, self.proxy = holder, args, proxy
        self.asked: list[str] = []
        self.stopping = asyncio.Event()  # set once the plugin is done: a silent leader's handler may end

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.asked.append(request.path)
        if request.path == f"/api/v1/namespaces/{NS}/pods":
            return web.json_response({"items": [{"metadata": {"name": LEADER}, "spec": {"containers": [
                {"name": "r", "args": self.args}]}}]})
        if request.path == f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/nm":
            return web.json_response({"spec": {"holderIdentity": self.holder}})
        if request.path == f"/api/v1/namespaces/{NS}/pods/{LEADER}:8080/proxy/status":
            return web.json_response(STATUS)
        if request.path.startswith(f"/api/v1/namespaces/{NS}/pods/{LEADER}:8080/proxy/"):
            return await self.proxy(request)
        return web.json_response({"kind": "Secret", "data": {"token": "not the leader's"}})

    def run(self, argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
        """`kubectl nodemedic ARGV` (its main, as a user runs it), with this API server on a thread of its own:
        (exit code, stdout, stderr)."""
        loop = asyncio.new_event_loop()
        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", self.handle)
        runner = web.AppRunner(app)
        loop.run_until_complete(runner.setup())
        loop.run_until_complete(web.TCPSite(runner, "127.0.0.1", 0).start())
        thread = threading.Thread(target=loop.run_forever)
        thread.start()
        config = tmp_path / "kubeconfig"
        server = f"http://127.0.0.1:{runner.addresses[0][1]}"
        config.write_text(f"apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: '{server}'}}}}]\n"
                          "users: [{name: u, user: {token: T}}]\n"
                          "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n")
        try:
            code = cli.main(["--kubeconfig", str(config), "-n", NS, *argv])
        finally:
            loop.call_soon_threadsafe(self.stopping.set)
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.run_until_complete(runner.cleanup())
            loop.close()
        out = capsys.readouterr()
        return code, out.out, out.err


def test_a_lease_holder_that_is_not_a_remediator_pod_is_refused_never_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for holder in ("../../attacker/pods/fake_1", "other-pod_1a2b3c4d", f"{LEADER}/x_1"):
        api = FakeApi(holder=holder)
        code, out, err = api.run(["plan"], tmp_path, capsys)
        assert code == 1 and out == ""
        assert err.startswith(f"kubectl nodemedic: the holder of Lease {NS}/nm, {holder!r}, is not one of the "
                              f"remediator pods in {NS} ({LEADER}): not read as the leader"), err
        assert api.asked == [f"/api/v1/namespaces/{NS}/pods", f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/nm"]


def test_a_lease_name_or_port_that_is_no_name_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    api = FakeApi(args=["run", "--lease-name=../../secrets/x", "--listen=:8080"])
    code, _, err = api.run(["plan"], tmp_path, capsys)
    assert code == 1 and "name no Lease and port this plugin can read" in err
    assert api.asked == [f"/api/v1/namespaces/{NS}/pods"]


@pytest.mark.parametrize("argv", [["why", "../../metrics"], ["why", "n1/../../x"], ["check", ".."],
                                  ["-n", "../kube-system", "plan"]])
def test_names_that_are_not_names_are_refused_before_any_request(
        argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    api = FakeApi()
    code, out, err = api.run(argv, tmp_path, capsys)
    assert code == 2 and out == "" and err.startswith("kubectl nodemedic: '") and "is not a " in err, err
    assert not [p for p in api.asked if "proxy/why" in p or "/metrics" in p or "/nodes" in p]


def test_a_valid_node_name_is_asked_for_at_its_own_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    async def why(request: web.Request) -> web.StreamResponse:
        return web.json_response({"node": "n1.zone-a", "facts": []})

    api = FakeApi(proxy=why)
    code, out, _ = api.run(["why", "n1.zone-a"], tmp_path, capsys)
    assert (code, out) == (0, "why n1.zone-a\n")
    assert api.asked[-1] == f"/api/v1/namespaces/{NS}/pods/{LEADER}:8080/proxy/why/n1.zone-a"
    assert names.node_name("n1.zone-a") == "n1.zone-a"


def test_an_answer_over_the_bound_is_not_read_whole(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reach, "MAX_ANSWER", 1 << 20)
    sent: list[int] = [0]

    async def endless(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        await resp.write(b'{"evictions": [')
        try:
            while sent[0] < 300 << 20:
                await resp.write(b'{"namespace": "a", "name": "p", "node": "n", "strategy": "s", "reason": "r"},'
                                 * 1000)
                sent[0] += 80_000
        except ConnectionError:
            pass
        return resp

    code, out, err = FakeApi(proxy=endless).run(["plan"], tmp_path, capsys)
    assert code == 2 and out == ""
    assert err == (f"kubectl nodemedic: the leader {LEADER} answered something this plugin does not understand: "
                   "/plan: over 1 MiB (not read further)\n")
    assert sent[0] < 100 << 20  # it stopped reading; the sender was stopped long before its 300 MiB


def test_an_answer_with_a_length_over_the_bound_is_refused_unread(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reach, "MAX_ANSWER", 1000)

    async def big(_: web.Request) -> web.StreamResponse:
        return web.json_response({"evictions": [], "padding": "x" * 2000})

    code, _, err = FakeApi(proxy=big).run(["plan"], tmp_path, capsys)
    assert code == 2 and err.endswith("/plan: over 0 MiB (not read further)\n")


@pytest.mark.parametrize(("status", "body", "said"), [
    (503, {"kind": "Status", "message": "error trying to reach service: dial tcp 10.0.0.7:8080: connect: refused"},
     f"the API server's pod proxy could not reach the leader {LEADER}:8080: error trying to reach service"),
    (404, {"kind": "Status", "message": f'pods "{LEADER}" not found'},
     f"the API server has no pod {LEADER} (the Lease's holder)"),
    (500, "500 Internal Server Error\n\nServer got itself in trouble",
     f"the leader {LEADER} answered /plan with HTTP 500: 500 Internal Server Error"),
])
def test_a_failure_behind_the_proxy_names_its_hop(
        status: int, body: Any, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    async def failing(_: web.Request) -> web.StreamResponse:
        text = json.dumps(body) if isinstance(body, dict) else body
        return web.Response(status=status, text=text)

    code, _, err = FakeApi(proxy=failing).run(["plan"], tmp_path, capsys)
    assert code == 1 and err.startswith(f"kubectl nodemedic: {said}"), err


def test_a_silent_leader_is_named_as_the_hop_that_failed_not_the_api_server(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reach, "ANSWER_TIMEOUT", 0.3)

    async def silent(_: web.Request) -> web.StreamResponse:
        await api.stopping.wait()
        return web.Response(status=504)

    api = FakeApi(proxy=silent)
    code, _, err = api.run(["plan"], tmp_path, capsys)
    assert code == 1
    assert err == (f"kubectl nodemedic: the leader {LEADER} did not answer /plan within 0.3s through the API server's "
                   "pod proxy (the API server itself answered the Lease read): the leader is stuck or overloaded\n")


def test_an_answer_that_is_not_json_is_not_understood(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    async def html(_: web.Request) -> web.StreamResponse:
        return web.Response(text="<html>hello</html>")

    code, _, err = FakeApi(proxy=html).run(["plan"], tmp_path, capsys)
    assert code == 2 and err.startswith(f"kubectl nodemedic: the leader {LEADER} answered something this plugin does "
                                        "not understand: /plan: the answer is not JSON")


def test_a_leader_of_another_version_is_said(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(STATUS, "version", "0.0.1")

    async def older(_: web.Request) -> web.StreamResponse:
        return web.json_response({"evictions": [{"name": "p"}]})

    code, _, err = FakeApi(proxy=older).run(["plan"], tmp_path, capsys)
    assert code == 2
    assert err.splitlines() == [
        f"kubectl nodemedic: the leader runs version 0.0.1, this plugin {__version__}",
        f"kubectl nodemedic: the leader {LEADER} answered something this plugin does not understand: /plan: "
        f"evictions[0]: no namespace (the leader runs version 0.0.1, this plugin {__version__}: use the plugin of "
        "the leader's version)"]


def test_control_characters_in_the_leaders_answers_reach_the_terminal_escaped(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    esc = "\x1b]52;c;ZXZpbA==\x07\x1b[2J"

    async def hostile(_: web.Request) -> web.StreamResponse:
        return web.json_response({"evictions": [{"namespace": "shop", "name": "web" + esc, "node": "n1\r",
                                                 "strategy": "s", "reason": "owner " + esc}]})

    code, out, _ = FakeApi(proxy=hostile).run(["plan"], tmp_path, capsys)
    assert code == 0 and "\x1b" not in out and "\r" not in out and "\x07" not in out
    assert "shop/web\\x1b]52;c;ZXZpbA==\\x07\\x1b[2J" in out


def test_the_api_server_hop_says_whether_it_answered() -> None:
    assert str(hops.api_server(ApiError(0, "GET", "/api/v1/nodes", "TimeoutError: "))).startswith(
        "the API server did not answer: GET /api/v1/nodes: HTTP 0")
    assert str(hops.api_server(ApiError(500, "GET", "/api/v1/nodes", '{"message": "etcd"}'))) == \
        "the API server said: GET /api/v1/nodes: HTTP 500: etcd"
