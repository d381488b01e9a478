"""Waiting for the node watch to show a new taint: no wait when it is there, the end of the wait when it arrives, and
the nodes still without it at the deadline (a missing node, a taint of another effect)."""

from __future__ import annotations

import asyncio

import pytest

from remediator.control import taints_seen
from remediator.control.taints_seen import unseen, wait_until_seen
from remediator.model.records import Effect, NodeRecord, Taint

KERNEL = Taint("nodemedic.io/kernel-deadlock", "true", Effect.NO_SCHEDULE)
WANT = {"sick": [KERNEL.identity()]}


def test_a_node_wearing_the_taint_is_seen_and_costs_no_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    async def no_sleep(_: float) -> None:
        raise AssertionError("waited although the taint was there")

    monkeypatch.setattr(taints_seen.asyncio, "sleep", no_sleep)
    nodes = {"sick": NodeRecord("sick", taints=(Taint("other", effect=Effect.NO_EXECUTE), KERNEL))}
    assert asyncio.run(wait_until_seen(nodes, WANT, within=60)) == set()


def test_the_wait_ends_when_the_watch_brings_the_taint() -> None:
    nodes = {"sick": NodeRecord("sick")}

    async def watch_then_wait() -> set[str]:
        waiting = asyncio.create_task(wait_until_seen(nodes, WANT, within=60))
        await asyncio.sleep(0)
        assert not waiting.done()
        nodes["sick"] = NodeRecord("sick", taints=(KERNEL,))
        return await waiting

    assert asyncio.run(watch_then_wait()) == set()


@pytest.mark.parametrize("nodes", [
    {},
    {"sick": NodeRecord("sick")},
    {"sick": NodeRecord("sick", taints=(Taint(KERNEL.key, "true", Effect.PREFER_NO_SCHEDULE),))},
], ids=["node gone from the cache", "no taint", "same key, another effect"])
def test_a_node_without_the_taint_at_the_deadline_is_returned(nodes: dict[str, NodeRecord]) -> None:
    assert asyncio.run(wait_until_seen(nodes, WANT, within=0.03)) == {"sick"}


def test_only_the_nodes_missing_a_taint_are_unseen() -> None:
    nodes = {"a": NodeRecord("a", taints=(KERNEL,)), "b": NodeRecord("b", taints=(KERNEL,))}
    other = Taint("nodemedic.io/disk", "true", Effect.NO_EXECUTE).identity()
    assert unseen(nodes, {"a": [KERNEL.identity()], "b": [KERNEL.identity(), other]}) == {"b"}
