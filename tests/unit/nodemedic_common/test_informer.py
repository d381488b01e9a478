"""The list+watch loop both programs share: LIST in pages with the collection's narrowing, WATCH from the LIST's
resourceVersion, resume from the last one (bookmarks too), relist at once on 410 Gone and after a back-off past an
event over the line bound, back off with doubling waits on any other failure and start over after a watch that
worked; odd answers and unreadable objects are logged, never the end of the loop."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import pytest

from nodemedic_common.informer import Backoff, Informer
from nodemedic_common.kube_errors import ApiError, WatchExpired, WatchLineTooLong
from tests.scripted_kube import ScriptedKube

LOG = logging.getLogger("test.informer")
PATH = "/api/v1/pods"


def obj(name: str, rv: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": rv}}


def page(rv: str, *names: str, cont: str = "") -> dict[str, Any]:
    meta = {"resourceVersion": rv} | ({"continue": cont} if cont else {})
    return {"metadata": meta, "items": [obj(n, rv) for n in names]}


class Seen:
    """What the informer handed over: every LIST's names, and each event's (type, name)."""

    def __init__(self, fail_on: str = "") -> None:
        self.lists: list[list[str]] = []
        self.events: list[tuple[str, str]] = []
        self.fail_on = fail_on

    def reset(self, items: list[dict[str, Any]]) -> None:
        self.lists.append([o["metadata"]["name"] for o in items])

    def apply(self, kind: str, o: dict[str, Any]) -> None:
        if o["metadata"]["name"] == self.fail_on:
            raise ValueError(f"cannot read {self.fail_on}")
        self.events.append((kind, o["metadata"]["name"]))


def run(kube: ScriptedKube, seen: Seen, done: Callable[[], bool], **kwargs: Any) -> tuple[Informer, list[float]]:
    """Run an informer (waits of 1 s, up to 4 s) until `done()`, within a deadline; the waits it asked for, none of
    them slept."""
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    informer = Informer(kube, PATH, reset=seen.reset, apply=seen.apply, log=LOG, backoff=Backoff(1.0, 4.0),  # type: ignore[arg-type]
                        sleep=sleep, **kwargs)

    async def main() -> None:
        task = asyncio.create_task(informer.run())
        while not done():
            await asyncio.sleep(0)
        task.cancel()

    asyncio.run(asyncio.wait_for(main(), 10))
    return informer, waits


def test_the_list_is_read_in_pages_narrowed_like_the_watch_and_the_watch_resumes_from_bookmarks() -> None:
    kube = ScriptedKube(lists=[page("7", "a", cont="token"), page("10", "b")],
                        watches=[[{"type": "ADDED", "object": obj("c", "11")},
                                  {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "20"}}}]])
    seen = Seen()
    informer, waits = run(kube, seen, lambda: len(kube.calls) >= 4, params={"fieldSelector": "spec.nodeName=n"},
                          page_size=2)
    assert [c.query for c in kube.calls] == [
        {"fieldSelector": "spec.nodeName=n", "limit": "2"},
        {"fieldSelector": "spec.nodeName=n", "limit": "2", "continue": "token"},
        {"fieldSelector": "spec.nodeName=n", "resourceVersion": "10"},  # the last page's version
        {"fieldSelector": "spec.nodeName=n", "resourceVersion": "20"},  # resumed from the bookmark, no LIST
    ]
    assert seen.lists == [["a", "b"]] and seen.events == [("ADDED", "c")], "a bookmark is not an event"
    assert informer.synced.is_set() and informer.resource_version == "20"
    assert waits == [], "a watch the server ended is resumed at once"


def test_a_slimmed_list_is_slimmed_page_by_page_and_handed_over_whole() -> None:
    kube = ScriptedKube(lists=[page("7", "a", "b", cont="token"), page("10", "c")], watches=[[]])
    seen = Seen()
    slimmed: list[tuple[str, int]] = []  # (name, LIST requests made when it was slimmed)

    def slim(o: dict[str, Any]) -> dict[str, Any]:
        slimmed.append((o["metadata"]["name"], len(kube.calls)))
        return {"metadata": {"name": o["metadata"]["name"].upper()}}

    run(kube, seen, lambda: len(kube.calls) >= 3, page_size=2, slim=slim)
    # The first page's objects were slimmed before the second page was asked for: never all decoded at once.
    assert slimmed == [("a", 1), ("b", 1), ("c", 2)]
    assert seen.lists == [["A", "B", "C"]], "reset gets the whole list, slimmed, at once"


def test_410_gone_relists_at_once_and_an_event_over_the_bound_relists_after_a_wait() -> None:
    kube = ScriptedKube(lists=[page("10", "a"), page("30", "b"), page("50", "c")],
                        watches=[WatchExpired(410, "WATCH", PATH, "too old"),
                                 WatchLineTooLong(0, "WATCH", PATH, "a watch event longer than 16 MiB")])
    seen = Seen()
    _, waits = run(kube, seen, lambda: len(kube.calls) >= 6)
    assert kube.versions() == [("LIST", ""), ("WATCH", "10"), ("LIST", ""), ("WATCH", "30"), ("LIST", ""),
                               ("WATCH", "50")]
    assert seen.lists == [["a"], ["b"], ["c"]]
    assert len(waits) == 1 and 0.5 <= waits[0] <= 1.5, "only the line bound waits (jittered around 1 s)"


def test_other_failures_rewatch_from_the_last_version_with_doubling_waits_up_to_the_ceiling_then_start_over(
        caplog: pytest.LogCaptureFixture) -> None:
    down = ApiError(0, "WATCH", PATH, "ClientConnectorError: connection refused")
    kube = ScriptedKube(lists=[page("10", "a")],
                        watches=[down, down, down, down, [{"type": "MODIFIED", "object": obj("a", "11")}], down])
    seen = Seen()
    with caplog.at_level(logging.WARNING, logger="test.informer"):
        _, waits = run(kube, seen, lambda: len(kube.calls) >= 8)
    assert kube.versions() == [("LIST", "")] + [("WATCH", "10")] * 5 + [("WATCH", "11")] * 2
    expected = [1.0, 2.0, 4.0, 4.0, 1.0]  # doubled up to Backoff.most; after a watch that worked, from the start
    assert len(waits) == len(expected)
    assert all(0.5 * e <= w <= 1.5 * e for w, e in zip(waits, expected, strict=True)), waits
    assert [r.message for r in caplog.records].count("watch failed, retrying") == 5


@pytest.mark.parametrize("answer", [None, ["a", "list"], {"items": []}, {"metadata": {}, "items": "x"}],
                         ids=["null", "a JSON list", "no metadata", "items not a list"])
def test_a_list_answer_that_is_not_a_list_is_logged_and_listed_again(answer: Any,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    kube = ScriptedKube(lists=[answer, page("10", "a")], watches=[])
    seen = Seen()
    with caplog.at_level(logging.WARNING, logger="test.informer"):
        _, waits = run(kube, seen, lambda: len(kube.calls) >= 3)
    assert kube.versions() == [("LIST", ""), ("LIST", ""), ("WATCH", "10")]
    assert seen.lists == [["a"]] and len(waits) == 1
    assert any("LIST /api/v1/pods: HTTP 0: not a list" in str(getattr(r, "error", "")) for r in caplog.records)


def test_an_object_the_callback_cannot_read_is_skipped_and_the_watch_resumes_after_it() -> None:
    kube = ScriptedKube(lists=[page("10")],
                        watches=[[{"type": "ADDED", "object": obj("bad", "11")},
                                  {"type": "ADDED", "object": obj("never", "12")}],
                                 [{"type": "ADDED", "object": obj("good", "13")}]])
    seen = Seen(fail_on="bad")
    run(kube, seen, lambda: len(kube.calls) >= 4)
    assert kube.versions() == [("LIST", ""), ("WATCH", "10"), ("WATCH", "11"), ("WATCH", "13")]
    assert seen.events == [("ADDED", "good")]
