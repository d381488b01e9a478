"""The `notifications` section: the sinks every remediation is announced to, and their queue."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from urllib.parse import urlsplit

import yaml

from remediator.policy.fields import MIN_BACKOFF, check_backoff
from remediator.policy.reader import Reader, Section

MAX_QUEUE_SIZE = 100_000
MAX_ATTEMPTS = 100  # a sink retried for ever holds its queue slot for ever
SINK_TYPES = ("webhook", "slack", "alertmanager")
_NOTIFICATIONS_KEYS = ("queueSize", "sinks")
_SINK_KEYS = ("type", "name", "url", "timeout", "maxAttempts", "initialBackoff", "maxBackoff", "headers")


@dataclass(frozen=True)
class SinkConfig:
    type: str  # "webhook" | "slack" | "alertmanager"
    url: str
    name: str = ""
    timeout: dt.timedelta = dt.timedelta(seconds=5)
    max_attempts: int = 5
    initial_backoff: dt.timedelta = dt.timedelta(milliseconds=500)
    max_backoff: dt.timedelta = dt.timedelta(seconds=30)
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Notifications:
    queue_size: int = 1000
    sinks: tuple[SinkConfig, ...] = ()


def _url_problem(url: str) -> str | None:
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError as e:
        return f"invalid URL {url!r}: {e}"
    if parts.scheme not in ("http", "https") or not host:
        return f"invalid URL {url!r}: must be http:// or https:// with a host"
    return None


def _sink(r: Reader, node: yaml.Node, path: str, index: int) -> SinkConfig:
    m = r.mapping(node, path, _SINK_KEYS)
    kind = r.text(m, "type", required=True)
    if kind and kind not in SINK_TYPES:
        r.error(m.values["type"], m.at("type"), f"unknown sink type {kind!r}; known: {', '.join(SINK_TYPES)}")
    d = SinkConfig(type=kind, url="")
    sink = SinkConfig(
        type=kind,
        url=r.text(m, "url", required=True, check=_url_problem),
        name=r.text(m, "name", f"{kind}-{index}", check=lambda s: None if s else "must not be empty"),
        timeout=r.duration(m, "timeout", d.timeout, positive=True),
        max_attempts=r.integer(m, "maxAttempts", d.max_attempts, minimum=1, maximum=MAX_ATTEMPTS),
        initial_backoff=r.duration(m, "initialBackoff", d.initial_backoff, floor=MIN_BACKOFF),
        max_backoff=r.duration(m, "maxBackoff", d.max_backoff),
        headers=r.string_map(m, "headers", lambda k: None if k.strip() else "header names must not be empty",
                             lambda v: None),
    )
    check_backoff(r, m, sink.initial_backoff, sink.max_backoff)
    return sink


def read_notifications(r: Reader, top: Section) -> Notifications:
    m = r.section(top, "notifications", _NOTIFICATIONS_KEYS)
    sinks: list[SinkConfig] = []
    for index, (node, path) in enumerate(r.sequence(m, "sinks") or []):
        sink = _sink(r, node, path, index)
        if any(s.name == sink.name for s in sinks):
            r.error(node, f"{path}.name", f"duplicate sink name {sink.name!r}; give each sink a distinct name")
        sinks.append(sink)
    # The queue holds alerts while sinks are slow; beyond this it is memory the remediator may not have.
    return Notifications(queue_size=r.integer(m, "queueSize", Notifications.queue_size, minimum=1,
                                              maximum=MAX_QUEUE_SIZE),
                         sinks=tuple(sinks))
