"""`kubectl nodemedic repair NODE --hold | --resume | --next`: what it writes on the Node, and what it refuses."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re
from typing import Any

import pytest

from nodemedic_common.kube_errors import ApiError
from nodemedic_common.repair_contract import HOLD_ANNOTATION, NEXT_ANNOTATION, REPAIR_ANNOTATION
from remediator.kubectl.repair_control import Refused, control

NOW = dt.datetime(2026, 11, 28, 12, 0, tzinfo=dt.UTC)


class FakeKube:
    def __init__(self, annotations: dict[str, str], *, user: str | None = "alice") -> None:
        self.node = {"metadata": {"name": "n1", "annotations": annotations}}
        self.patches: list[dict[str, Any]] = []
        self.user = user

    async def get(self, path: str, **_: str) -> Any:
        if path != "/api/v1/nodes/n1":
            raise ApiError(404, "GET", path, '{"message": "not found"}')
        return self.node

    async def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> Any:
        if path.endswith("/selfsubjectreviews"):
            if self.user is None:
                raise ApiError(403, method, path, '{"message": "forbidden"}')
            return {"status": {"userInfo": {"username": self.user}}}
        assert (method, path) == ("PATCH", "/api/v1/nodes/n1")
        self.patches.append(body["metadata"]["annotations"])
        return {}


def ladder(action: str, step: int = 0) -> dict[str, str]:
    return {REPAIR_ANNOTATION: json.dumps({"id": f"1764331200-{step}", "action": action, "step": step})}


def run(kube: FakeKube, node: str, how: str) -> str:
    return asyncio.run(control(kube, node, how, now=NOW))  # type: ignore[arg-type]


def test_hold_records_who_and_when() -> None:
    kube = FakeKube(ladder("reboot", 1))
    assert run(kube, "n1", "hold") == "n1: repair held by alice; nodemedic takes no further step until `--resume`"
    assert kube.patches == [{HOLD_ANNOTATION: "alice at 2026-11-28T12:00:00Z"}]
    kube = FakeKube({}, user=None)
    run(kube, "n1", "hold")
    assert kube.patches == [{HOLD_ANNOTATION: "a person at 2026-11-28T12:00:00Z"}]


def test_next_names_the_step_under_way() -> None:
    kube = FakeKube(ladder("reboot", 1))
    assert run(kube, "n1", "next").startswith("n1: step 2 (reboot) ends now")
    assert kube.patches == [{NEXT_ANNOTATION: "1764331200-1"}]


def test_resume_lifts_a_hold_and_sends_a_node_with_a_person_round_again() -> None:
    kube = FakeKube({**ladder("restart"), HOLD_ANNOTATION: "alice"})
    assert run(kube, "n1", "resume") == "n1: repair resumed"
    assert kube.patches == [{HOLD_ANNOTATION: None}]
    kube = FakeKube(ladder("person", 3))
    assert run(kube, "n1", "resume") == "n1: repair resumed from its first step"
    assert kube.patches == [{HOLD_ANNOTATION: None, NEXT_ANNOTATION: "1764331200-3"}]


@pytest.mark.parametrize(("annotations", "node", "how", "message"), [
    ({}, "n1", "next", "n1 has no repair ladder under way"),
    (ladder("restart"), "n1", "resume", "n1 is neither held nor handed to a person"),
    ({REPAIR_ANNOTATION: "[1, 2"}, "n1", "next", "the node's repair annotation is unreadable"),
    ({**ladder("reboot", 1), HOLD_ANNOTATION: "alice"}, "n1", "next", "n1's repair is held (alice): `--resume` first"),
    ({}, "../../metrics", "hold", "'../../metrics' is not a node name"),
    ({}, "N1\x1b[2J", "hold", "is not a node name"),
], ids=["next without a ladder", "resume with nothing to resume", "garbage annotation", "next while held",
        "a path as node name",
        "control characters"])
def test_what_makes_no_sense_is_refused_and_nothing_written(annotations: dict[str, str], node: str, how: str,
                                                             message: str) -> None:
    kube = FakeKube(annotations)
    with pytest.raises(Refused, match=re.escape(message)):
        run(kube, node, how)
    assert kube.patches == []
