"""An answer's body rendered once per object, off the event loop, shared by the requests that wait for it."""

from __future__ import annotations

import asyncio
import threading

from nodemedic_common.rendered_once import RenderedOnce


class Thing:
    def __init__(self, text: str) -> None:
        self.text = text


def test_concurrent_requests_for_one_object_share_one_rendering_done_off_the_loop() -> None:
    calls: list[tuple[str, int]] = []
    release = threading.Event()

    def render(thing: Thing) -> bytes:
        release.wait(10)  # held until every request waits for it: they must share this one rendering
        calls.append((thing.text, threading.get_ident()))
        return thing.text.encode()

    async def go() -> None:
        cache: RenderedOnce[Thing] = RenderedOnce(render)
        first, second = Thing("plan 1"), Thing("plan 2")
        waiting = [asyncio.create_task(cache.body(first)) for _ in range(24)]
        await asyncio.sleep(0)  # the loop runs while the rendering is held: it is not on this thread
        release.set()
        assert await asyncio.gather(*waiting) == [b"plan 1"] * 24
        assert await cache.body(first) == b"plan 1"
        assert await cache.body(second) == b"plan 2"
        assert [text for text, _ in calls] == ["plan 1", "plan 2"]
        assert all(thread != threading.get_ident() for _, thread in calls)

    asyncio.run(asyncio.wait_for(go(), 20))


def test_a_request_that_goes_away_does_not_cancel_the_rendering_others_wait_for() -> None:
    release = threading.Event()

    def render(thing: Thing) -> bytes:
        release.wait(10)
        return thing.text.encode()

    async def go() -> None:
        cache: RenderedOnce[Thing] = RenderedOnce(render)
        thing = Thing("plan")
        leaving, staying = asyncio.create_task(cache.body(thing)), asyncio.create_task(cache.body(thing))
        await asyncio.sleep(0)
        leaving.cancel()
        release.set()
        assert await staying == b"plan"

    asyncio.run(asyncio.wait_for(go(), 20))
