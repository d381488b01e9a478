"""The savings ledger's ConfigMap (actions/savings_writer.py): none yet reads as empty, created then updated over the
version read, a conflict and an unreadable object raised for the caller."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from nodemedic_common.kube_errors import ApiError
from remediator.actions.savings_writer import LedgerStore
from remediator.model.savings import KEY, Ledger, LedgerError, Room, seat
from tests.unit.remediator.fake_configmaps import ConfigMaps

PATH = "/api/v1/namespaces/ops/configmaps/nodemedic-savings"
ROOM = Room("shop/a", "u1", "n1", "general", "m5.large", 0.2, dt.datetime(2026, 11, 28, tzinfo=dt.UTC))


def store(api: ConfigMaps) -> LedgerStore:
    return LedgerStore(api, "ops", "nodemedic-savings")  # type: ignore[arg-type]


def test_no_ledger_yet_is_an_empty_one_created_on_the_first_write_and_updated_after() -> None:
    api = ConfigMaps()
    s = store(api)
    assert asyncio.run(s.load()) == Ledger()
    asyncio.run(s.save(seat(Ledger("USD"), ROOM)))
    assert api.calls == [("GET", PATH), ("POST", "/api/v1/namespaces/ops/configmaps")]
    asyncio.run(s.save(Ledger("USD")))
    assert api.calls[-1] == ("PUT", PATH)
    assert asyncio.run(store(api).load()) == Ledger("USD")
    assert KEY in api.objects[PATH]["data"]


def test_a_write_over_a_version_another_writer_moved_is_a_conflict() -> None:
    api = ConfigMaps()
    first, second = store(api), store(api)
    asyncio.run(first.save(Ledger("USD")))
    asyncio.run(second.load())
    asyncio.run(first.save(seat(Ledger("USD"), ROOM)))
    with pytest.raises(ApiError) as e:
        asyncio.run(second.save(Ledger("USD")))
    assert e.value.status == 409


def test_an_unreadable_ledger_and_an_unreachable_server_are_raised() -> None:
    api = ConfigMaps()
    api.put_object(PATH, {"data": {KEY: '{"format": "something else"}'}})
    with pytest.raises(LedgerError, match=r"configmap ops/nodemedic-savings: data\.ledger\.json: format"):
        asyncio.run(store(api).load())
    api.fail = [503]
    with pytest.raises(ApiError):
        asyncio.run(store(api).load())
