"""`kubectl nodemedic savings` reading the ledger (kubectl/savings_ledger.py): its name from the remediator's
arguments or --ledger, the object read with the person's credentials, each failure said plainly."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from typing import Any

import pytest

from nodemedic_common.kube_errors import ApiError
from remediator.kubectl.reach import NotFound
from remediator.kubectl.savings_ledger import ledger_name, show
from remediator.model.savings import KEY, Ledger, Room, seat, to_json

NOW = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.UTC)
LEDGER = seat(Ledger("USD"), Room("shop/a", "ua", "n1", "general", "m5.large", 0.5, NOW - dt.timedelta(hours=2)))


class Api:
    def __init__(self, pods: list[Any], configmap: Any = None, status: int = 0) -> None:
        self.pods, self.configmap, self.status = pods, configmap, status
        self.paths: list[str] = []

    async def get(self, path: str, **_: str) -> Any:
        self.paths.append(path)
        return {"items": self.pods}

    async def request(self, method: str, path: str, **_: Any) -> Any:
        self.paths.append(path)
        if self.status:
            raise ApiError(self.status, method, path, '{"message": "no"}')
        return self.configmap


def remediator(*args: str) -> dict[str, Any]:
    return {"metadata": {"name": "r"}, "spec": {"containers": [{"args": ["run", *args]}]}}


def test_the_ledger_named_by_the_remediator_is_read_and_counted_up_to_now() -> None:
    api = Api([remediator("--savings-ledger=nodemedic-savings")], {"data": {KEY: json.dumps(to_json(LEDGER))}})
    text = asyncio.run(show(api, "nodemedic", None, days=7, output="text", now=NOW))  # type: ignore[arg-type]
    assert api.paths[-1] == "/api/v1/namespaces/nodemedic/configmaps/nodemedic-savings"
    assert "2026-11-29  general  1       2.00        1.00 USD" in text
    doc = json.loads(asyncio.run(show(api, "nodemedic", "other", days=7, output="json", now=NOW)))  # type: ignore[arg-type]
    assert api.paths[-1].endswith("/configmaps/other") and doc["open"][0]["pod"] == "shop/a"


@pytest.mark.parametrize(("api", "message"), [
    (Api([]), "no remediator pod in namespace nodemedic"),
    (Api([remediator("--lease-name=x")]), r"keeps no savings ledger \(no --savings-ledger argument\)"),
    (Api([remediator("--savings-ledger=Bad_Name")]), "name a ledger this plugin cannot read"),
])
def test_a_ledger_that_cannot_be_named_is_said(api: Api, message: str) -> None:
    with pytest.raises(NotFound, match=message):
        asyncio.run(ledger_name(api, "nodemedic"))  # type: ignore[arg-type]


@pytest.mark.parametrize(("api", "message"), [
    (Api([], status=404), "no savings ledger nodemedic/l yet"),
    (Api([], status=403), "not allowed to read configmap nodemedic/l: ask for the chart's viewer role"),
    (Api([], {"data": {KEY: "[]"}}), "configmap nodemedic/l: data.ledger.json: <document>: an object expected"),
])
def test_a_missing_forbidden_or_unreadable_ledger_is_said(api: Api, message: str) -> None:
    with pytest.raises(NotFound, match=message):
        asyncio.run(show(api, "nodemedic", "l", days=7, output="text", now=NOW))  # type: ignore[arg-type]
