"""`nodemedic-remediator run` refuses what would hurt before it starts: lease timings that let two replicas lead at
once, a kubeconfig that does not exist or names no context (exit 2, the file named, no traceback)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from nodemedic_common.kube_client import Kube
from nodemedic_common.kube_credentials import Credentials
from nodemedic_common.kube_errors import ApiError
from remediator.cli import main
from remediator.control.leader import LeaseTimings
from remediator.state import live_cluster

ROOT = Path(__file__).resolve().parents[3]
POLICY = str(ROOT / "deploy" / "policy" / "default.yaml")


@pytest.mark.parametrize(("timings", "expected"), [
    (LeaseTimings(15, 10, 2), []),
    (LeaseTimings(6, 4, 1), []),
    (LeaseTimings(10, 10, 2), ["--lease-duration (10s) must be greater than --renew-deadline (10s)"]),
    (LeaseTimings(10, 15, 2), ["--lease-duration (10s) must be greater than --renew-deadline (15s)"]),
    (LeaseTimings(15, 2.4, 2), ["--renew-deadline (2.4s) must be greater than --retry-period x 1.2 (2.4s)"]),
    (LeaseTimings(15, 10, 0), ["--retry-period: must be greater than zero, got 0s"]),
    (LeaseTimings(0, 10, 2), ["--lease-duration: must be greater than zero, got 0s"]),
    (LeaseTimings(1.5, 1.2, 1), ["--lease-duration: must be a whole number of seconds",
                                 "--renew-deadline (1.2s) must be greater than --retry-period x 1.2"]),
    (LeaseTimings(15, 10, 0.5), ["--retry-period: must be at least 1s"]),
], ids=["defaults", "e2e", "equal", "deadline-over-lease", "retry-fills-deadline", "zero-retry", "zero-lease",
        "fractional-lease", "retry-floods"])
def test_lease_timings_are_checked_as_client_go_checks_them(timings: LeaseTimings, expected: list[str]) -> None:
    errors = timings.errors()
    assert len(errors) == len(expected), errors
    for error, start in zip(errors, expected, strict=True):
        assert error.startswith(start), errors


def test_run_refuses_bad_lease_timings_with_exit_2_before_starting(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["run", "--policy", POLICY, "--lease-duration", "10s", "--renew-deadline", "10s", "--listen", ""])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err == ("nodemedic-remediator run: --lease-duration (10s) must be greater than --renew-deadline (10s): "
                   "a standby could take over while the leader still acts\n")


@pytest.mark.parametrize("level", ["error", "LOUD", ""])
def test_run_refuses_a_log_level_that_is_not_one_with_exit_2_naming_the_choices(
        level: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["run", "--log-level", level])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "argument --log-level: invalid choice" in err and "'DEBUG', 'INFO', 'WARNING', 'ERROR'" in err, err
    assert "Traceback" not in err


@pytest.mark.parametrize(("flag", "value"), [("--lease-name", "a/../../b"), ("--lease-namespace", "Kube_System")])
def test_run_refuses_a_lease_the_api_server_would_refuse_before_starting(
        capsys: pytest.CaptureFixture[str], flag: str, value: str) -> None:
    """The Lease's namespace and name go into URL paths: a "/" would make the election ask for another path."""
    with pytest.raises(SystemExit) as exited:
        main(["run", "--policy", POLICY, flag, value, "--listen", ""])
    assert exited.value.code == 2
    assert f"argument {flag}: invalid " in capsys.readouterr().err


@pytest.mark.parametrize("command", ["run", "plan"])
def test_a_missing_kubeconfig_is_named_with_exit_2_and_no_traceback(
        command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.kubeconfig"
    extra = ["--listen", ""] if command == "run" else []
    assert main([command, "--policy", POLICY, "--kubeconfig", str(missing), *extra]) == 2
    err = capsys.readouterr().err
    assert f"nodemedic-remediator: {missing}: kubeconfig file not found" in err
    assert "Traceback" not in err


def test_a_kubeconfig_without_a_context_is_named_with_exit_2(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.kubeconfig"
    empty.write_text("apiVersion: v1\nkind: Config\nclusters: []\n")
    assert main(["run", "--policy", POLICY, "--kubeconfig", str(empty), "--listen", ""]) == 2
    err = capsys.readouterr().err
    assert f"nodemedic-remediator: {empty}: " in err and "current-context" in err
    assert "Traceback" not in err


def test_run_refuses_a_sync_timeout_of_zero(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["run", "--policy", POLICY, "--once", "--sync-timeout", "0s", "--listen", ""])
    assert exited.value.code == 2
    assert capsys.readouterr().err == "nodemedic-remediator run: --sync-timeout: must be greater than zero, got 0s\n"


def one_page(get: Callable[..., Awaitable[object]]) -> Callable[..., AsyncIterator[object]]:
    """Kube.list_pages answering each list with what `get` answers, as its only page."""
    async def list_pages(self: Kube, path: str, params: object = None, *, page_size: int) -> AsyncIterator[object]:
        yield await get(self, path)
    return list_pages


@pytest.mark.parametrize(("answer", "error"), [
    ([], "GET /api/v1/nodes: not a Kubernetes list: the answer is a list, not an object"),
    ("nodes", "GET /api/v1/nodes: not a Kubernetes list: the answer is a string, not an object"),
    ({"items": 5}, "GET /api/v1/nodes: not a Kubernetes list: items is a number, not a list"),
    ({"items": {"a": 1}}, "GET /api/v1/nodes: not a Kubernetes list: items is an object, not a list"),
    ({"items": [{}, "n1"]}, "GET /api/v1/nodes: not a Kubernetes list: items[1] is a string, not an object"),
], ids=["a list", "a string", "items a number", "items an object", "an item a string"])
def test_a_cluster_answer_that_is_not_a_kubernetes_list_is_exit_2_naming_the_path(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], answer: object, error: str) -> None:
    async def get(self: Kube, path: str, **params: str) -> object:
        return answer if path == "/api/v1/nodes" else {"items": []}
    monkeypatch.setattr(live_cluster, "load_credentials", lambda kubeconfig: Credentials("https://x", False))
    monkeypatch.setattr(Kube, "list_pages", one_page(get))
    assert main(["plan", "--policy", POLICY, "--kubeconfig", "k"]) == 2
    err = capsys.readouterr().err
    assert f"nodemedic-remediator plan: {error}" in err and "Traceback" not in err


async def nothing_found(self: Kube, method: str, path: str, **_: object) -> object:
    """The API of a cluster without a node autoscaler (what `plan` asks besides its lists)."""
    raise ApiError(404, method, path, '{"kind": "Status", "code": 404, "reason": "NotFound", "message": "not found"}')


def test_a_node_whose_metadata_is_not_an_object_is_left_out_of_the_plan_without_a_traceback(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    async def get(self: Kube, path: str, **params: str) -> object:
        return {"items": [{"metadata": 5}]} if path == "/api/v1/nodes" else {"items": []}
    monkeypatch.setattr(live_cluster, "load_credentials", lambda kubeconfig: Credentials("https://x", False))
    monkeypatch.setattr(Kube, "list_pages", one_page(get))
    monkeypatch.setattr(Kube, "request", nothing_found)
    assert main(["plan", "--policy", POLICY, "--kubeconfig", "k"]) == 0
    assert "Traceback" not in capsys.readouterr().err


FULL_POOL = ROOT / "tests/testdata/snapshots/full-karpenter-pool.json"  # the sick node's pod fits no other node


@pytest.mark.parametrize(("discovery", "flag", "outcome", "said"), [
    ({"resources": [{"name": "nodepools"}]}, [], "evicted: to a new node like sick from Karpenter (detected)", ""),
    (None, [], "protected: no node autoscaler detected (autoscaler.addsNodes: auto)", ""),
    (ApiError(500, "GET", "/apis/karpenter.sh/v1", '{"message": "etcd timed out"}'), [],
     "protected: no node autoscaler detected (autoscaler.addsNodes: auto)",
     "nodemedic-remediator plan: node autoscaler karpenter: GET /apis/karpenter.sh/v1: HTTP 500: etcd timed out: "
     "counted as not detected\n"),
    ({"resources": [{"name": "nodepools"}]}, ["--autoscaler", "none"],
     "protected: no node autoscaler detected (autoscaler.addsNodes: auto)", ""),
], ids=["karpenter-detected", "nothing-there", "api-failing", "flag-overrides"])
def test_a_live_plan_detects_the_autoscaler_once_unless_the_flag_says_which(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], discovery: object, flag: list[str],
        outcome: str, said: str) -> None:
    items = json.loads(FULL_POOL.read_text())["items"]
    kinds = {"/api/v1/nodes": "Node", "/api/v1/pods": "Pod"}
    asked: list[str] = []

    async def get(self: Kube, path: str, **params: str) -> object:
        return {"items": [i for i in items if i["kind"] == kinds.get(path)]}

    async def request(self: Kube, method: str, path: str, **_: object) -> object:
        asked.append(path)
        if path == "/apis/karpenter.sh/v1" and discovery is not None:
            if isinstance(discovery, ApiError):
                raise discovery
            return discovery
        if path == "/apis/coordination.k8s.io/v1/leases":  # Karpenter's leader, renewed 3s before --now
            return {"items": [{"metadata": {"name": "karpenter-leader-election", "namespace": "karpenter"},
                               "spec": {"holderIdentity": "k-1", "renewTime": "2026-03-01T11:59:57.000000Z"}}]}
        return await nothing_found(self, method, path)

    monkeypatch.setattr(live_cluster, "load_credentials", lambda kubeconfig: Credentials("https://x", False))
    monkeypatch.setattr(Kube, "list_pages", one_page(get))
    monkeypatch.setattr(Kube, "request", request)
    assert main(["plan", "--policy", POLICY, "--kubeconfig", "k", "--json", "--now", "2026-03-01T12:00:00Z",
                 *flag]) == 0
    out, err = capsys.readouterr()
    plan = json.loads(out)
    assert [f"evicted: {e['reason'].rsplit('now: ', 1)[1]}" for e in plan["evictions"]] + [
        f"protected: {p['why'].rsplit('; ', 1)[1]}" for p in plan["protected"]] == [outcome]
    assert err == said
    lease = ["/apis/coordination.k8s.io/v1/leases"] if discovery == {"resources": [{"name": "nodepools"}]} else []
    assert sorted(asked) == ([] if flag else ["/api/v1/namespaces/kube-system/configmaps/cluster-autoscaler-status",
                                              *lease, "/apis/karpenter.sh/v1"])
