"""`kubectl nodemedic fence NODE --confirm | --cancel`: refused for a node that runs, written (guarded by the node's
resourceVersion) for a dark one."""

from __future__ import annotations

import asyncio
import datetime as dt
import re
from typing import Any

import pytest

from nodemedic_common.fence_contract import CONFIRM_ANNOTATION, FENCE_ANNOTATION
from nodemedic_common.kube_errors import ApiError
from remediator.kubectl import cli
from remediator.kubectl.fence_control import control
from remediator.kubectl.repair_control import Refused

NOW = dt.datetime(2026, 11, 28, 12, 0, tzinfo=dt.UTC)


def conditions(ready: str, *, agent: str | None) -> list[dict[str, str]]:
    out = [{"type": "Ready", "status": ready, "lastTransitionTime": "2026-11-28T11:50:00Z",
            "lastHeartbeatTime": "2026-11-28T11:49:20Z"}]
    if agent is not None:
        out.append({"type": "KernelDeadlock", "status": "False", "lastTransitionTime": "2026-11-28T10:00:00Z",
                    "lastHeartbeatTime": agent})
    return out


class FakeKube:
    def __init__(self, ready: str, *, agent: str | None = "2026-11-28T11:45:00Z",
                 annotations: dict[str, str] | None = None) -> None:
        self.node = {"metadata": {"name": "n1", "resourceVersion": "42", "annotations": annotations or {}},
                     "status": {"conditions": conditions(ready, agent=agent)}}
        self.patches: list[dict[str, Any]] = []

    async def get(self, path: str, **_: str) -> Any:
        if path != "/api/v1/nodes/n1":
            raise ApiError(404, "GET", path, '{"message": "not found"}')
        return self.node

    async def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> Any:
        if path.endswith("/selfsubjectreviews"):
            return {"status": {"userInfo": {"username": "alice"}}}
        assert (method, path) == ("PATCH", "/api/v1/nodes/n1")
        self.patches.append(body["metadata"])
        return {}


def run(kube: FakeKube, how: str, node: str = "n1") -> str:
    return asyncio.run(control(kube, node, how, now=NOW))  # type: ignore[arg-type]


def test_a_dark_node_is_confirmed_with_who_and_when_guarded_by_its_resource_version() -> None:
    kube = FakeKube("Unknown")
    assert run(kube, "confirm").startswith("n1: confirmed off by alice; the remediator puts "
                                           "node.kubernetes.io/out-of-service on")
    assert kube.patches == [{"resourceVersion": "42",
                             "annotations": {CONFIRM_ANNOTATION: "2026-11-28T12:00:00Z by alice"}}]


@pytest.mark.parametrize(("kube", "how", "message"), [
    (FakeKube("True"), "confirm", "refused: n1 is Ready=True: its kubelet reports, so the machine runs"),
    (FakeKube("False"), "confirm", "refused: n1 is Ready=False: its kubelet reports"),
    (FakeKube("Unknown", agent="2026-11-28T11:55:00Z"), "confirm",
     "its agent wrote at 2026-11-28T11:55:00Z, within 6m0s (darkNodes.agentSilence): the machine runs; the repair "
     "ladder restarts the kubelet instead"),
    (FakeKube("Unknown"), "", "n1 is dark (its kubelet silent since 2026-11-28T11:50:01Z); fencing frees its pods"),
    (FakeKube("Unknown"), "cancel", "n1 has no fence confirmation to cancel"),
    (FakeKube("Unknown", annotations={CONFIRM_ANNOTATION: "x", FENCE_ANNOTATION: "{}"}), "cancel",
     "n1 is fenced already"),
], ids=["ready", "not ready but reporting", "agent alive", "no --confirm", "nothing to cancel", "fenced already"])
def test_a_node_that_runs_is_refused_and_nothing_written(kube: FakeKube, how: str, message: str) -> None:
    with pytest.raises(Refused, match=re.escape(message)):
        run(kube, how)
    assert kube.patches == []


def test_the_agent_silence_is_the_policys() -> None:
    """The agent wrote 4 minutes ago (before the kubelet went silent): within the default 6m it runs; with the
    policy's 2m it is silent."""
    kube = FakeKube("Unknown", agent="2026-11-28T11:56:00Z")
    with pytest.raises(Refused, match="within 6m0s"):
        run(kube, "confirm")
    assert asyncio.run(control(kube, "n1", "confirm", now=NOW,  # type: ignore[arg-type]
                               agent_silence=dt.timedelta(minutes=2))).startswith("n1: confirmed off by alice")


def test_cancel_withdraws_a_confirmation() -> None:
    kube = FakeKube("Unknown", annotations={CONFIRM_ANNOTATION: "2026-11-28T11:59:00Z by bob"})
    assert run(kube, "cancel") == "n1: fence confirmation cancelled"
    assert kube.patches == [{"resourceVersion": "42", "annotations": {CONFIRM_ANNOTATION: None}}]


def test_an_unknown_node_is_refused_by_name(capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    async def fake_main(args: Any) -> str:
        return await cli.run(args, FakeKube("Unknown", agent="2026-01-01T00:00:00Z"))  # type: ignore[arg-type]

    monkeypatch.setattr(cli, "_main", fake_main)
    assert cli.main(["fence", "ghost", "--confirm"]) == 1
    assert "kubectl nodemedic: no node ghost" in capsys.readouterr().err
    assert cli.main(["fence", "n1"]) == 2
    assert "add --confirm once it is" in capsys.readouterr().err
