"""The Landings' writes (actions/landing_writer.py): idempotent on our own name, errors of others raised."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import pytest

from nodemedic_common.kube_errors import ApiError
from remediator.actions.landing_writer import close_landing, left_open, open_landing
from remediator.model.landing import Landing, landings_path

LANDING = Landing(name="nodemedic-landing-0011aabb", namespace="shop", owner_uid="rs-web", owner="ReplicaSet/web",
                  node="n2", hostname="n2", moved="shop/a", source="n1",
                  decided=dt.datetime(2026, 3, 1, tzinfo=dt.UTC), before=frozenset(), strategy="BalanceResourceMix",
                  lasts=dt.timedelta(minutes=2), deadline=dt.datetime(2026, 3, 1, tzinfo=dt.UTC))


class Api:
    def __init__(self, status: int = 0, answer: Any = None) -> None:
        self.status, self.answer = status, answer
        self.calls: list[tuple[str, str, Any]] = []

    async def request(self, method: str, path: str, *, body: Any = None, params: Any = None, **_: Any) -> Any:
        self.calls.append((method, path, params or body))
        if self.status:
            raise ApiError(self.status, method, path, "{}")
        return self.answer


def test_open_posts_the_landing_and_takes_a_conflict_on_its_own_name_as_open() -> None:
    api = Api()
    asyncio.run(open_landing(api, "ops", LANDING))  # type: ignore[arg-type]
    assert api.calls == [("POST", "/apis/nodemedic.io/v1alpha1/namespaces/ops/landings", LANDING.resource("ops"))]
    asyncio.run(open_landing(Api(409), "ops", LANDING))  # type: ignore[arg-type]
    with pytest.raises(ApiError):
        asyncio.run(open_landing(Api(403), "ops", LANDING))  # type: ignore[arg-type]


def test_close_deletes_and_takes_a_landing_gone_as_closed() -> None:
    api = Api()
    asyncio.run(close_landing(api, "ops", LANDING.name))  # type: ignore[arg-type]
    assert api.calls[0][:2] == ("DELETE", f"{landings_path('ops')}/nodemedic-landing-0011aabb")
    asyncio.run(close_landing(Api(404), "ops", LANDING.name))  # type: ignore[arg-type]
    with pytest.raises(ApiError):
        asyncio.run(close_landing(Api(500), "ops", LANDING.name))  # type: ignore[arg-type]


def test_left_open_lists_the_namespace_s_landings_and_passes_over_odd_items() -> None:
    api = Api(answer={"items": [{"metadata": {"name": "nodemedic-landing-2"}}, {"metadata": {"name": 5}}, "x",
                                {"metadata": {"name": "nodemedic-landing-1"}}]})
    assert asyncio.run(left_open(api, "ops")) == ["nodemedic-landing-1", "nodemedic-landing-2"]  # type: ignore[arg-type]
    assert api.calls[0][1:] == ("/apis/nodemedic.io/v1alpha1/namespaces/ops/landings", {"limit": "500"})
    assert asyncio.run(left_open(Api(answer=["not", "a", "list"]), "ops")) == []  # type: ignore[arg-type]
