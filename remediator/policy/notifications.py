"""The `notifications` section: the sinks every remediation is announced to, and their queue.

A sink's URL (a Slack incoming-webhook URL is a credential) and its header values (`Authorization`) may be written
in the file, or, to keep them out of a ConfigMap, read from a file (a mounted Secret) or an environment variable:

    url: {file: /etc/nodemedic/secrets/slack-url}      # the file's content, surrounding whitespace removed
    headers: {Authorization: {env: ALERTS_TOKEN}}

A file must be a regular file of at most 64 KiB under the secrets directory (`--secrets-dir`, default
/etc/nodemedic/secrets, where the chart mounts the Secret): see secret_files.py.

They are read when the policy is loaded (and reloaded), and no message, here or later, ever repeats one: an
invalid URL is reported without its text.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import yaml

from nodemedic_common.redaction import MIN_SECRET_LENGTH, header_secrets, url_secrets
from remediator.policy.fields import MIN_BACKOFF, check_backoff
from remediator.policy.reader import Reader, Section
from remediator.policy.secret_files import location_problem, read_secret_file

MAX_QUEUE_SIZE = 100_000
MAX_ATTEMPTS = 100  # a sink retried for ever holds its queue slot for ever
SINK_TYPES = ("webhook", "slack", "alertmanager")
_NOTIFICATIONS_KEYS = ("queueSize", "sinks")
_SINK_KEYS = ("type", "name", "url", "timeout", "maxAttempts", "initialBackoff", "maxBackoff", "headers")
_SECRET_SOURCES = ("file", "env")


@dataclass(frozen=True)
class SinkConfig:
    type: str  # "webhook" | "slack" | "alertmanager"
    url: str = field(repr=False)  # may be a credential: never in a repr, a log line or a message
    name: str = ""
    timeout: dt.timedelta = dt.timedelta(seconds=5)
    max_attempts: int = 5
    initial_backoff: dt.timedelta = dt.timedelta(milliseconds=500)
    max_backoff: dt.timedelta = dt.timedelta(seconds=30)
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    def secrets(self) -> tuple[str, ...]:
        """What no output may contain, in any form (nodemedic_common.redaction): the URL, its path and query (where a
        Slack URL keeps its key, and what a server echoes back), its token segments and userinfo, every header value
        and its credential without the scheme ("Bearer <token>")."""
        values = url_secrets(self.url)
        for _, value in self.headers:
            values += header_secrets(value)
        return tuple(dict.fromkeys(v for v in values if len(v) >= MIN_SECRET_LENGTH))


@dataclass(frozen=True)
class Notifications:
    queue_size: int = 1000
    sinks: tuple[SinkConfig, ...] = ()
    # The files values were read from: the running remediator re-reads the policy when one changes (a rotated key).
    secret_files: tuple[str, ...] = ()


def _url_problem(url: str) -> str | None:
    """What is wrong with a sink URL, never quoting it: it may be a credential."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return "invalid URL: it cannot be parsed (not shown: a sink URL may be a credential)"
    if parts.scheme not in ("http", "https") or not host:
        return "invalid URL: must be http:// or https:// with a host (not shown: a sink URL may be a credential)"
    return None


def _secret_text(r: Reader, m: Section, key: str, files: list[str], *, required: bool,
                 check: Callable[[str], str | None] | None = None) -> str:
    """m[key] as text, or read from `{file: PATH}` / `{env: NAME}`; errors name the source, never the value."""
    node = m.values.get(key)
    if not isinstance(node, yaml.MappingNode):
        return r.text(m, key, required=required, check=check, secret=True)
    ref = r.mapping(node, m.at(key), _SECRET_SOURCES)
    ref.anchor = m.key_nodes[key]
    given = [k for k in _SECRET_SOURCES if k in ref.values]
    if len(given) != 1:
        r.error(node, m.at(key), "give exactly one of file (a mounted Secret) or env")
        return ""
    source = given[0]
    name = r.text(ref, source, required=True)
    if not name:
        return ""
    if source == "file":
        if problem := location_problem(name, r.secrets_dir):
            r.error(ref.values["file"], ref.at("file"), problem)
            return ""
        files.append(name)
        try:
            value = read_secret_file(name, r.secrets_dir)
        except OSError as e:
            detail = f"cannot read {name}: {e.strerror}" if e.strerror else str(e)
            r.error(ref.values["file"], ref.at("file"), detail)
            return ""
    else:
        value = os.environ.get(name, "").strip()
    if not value:
        r.error(ref.values[source], ref.at(source), f"{name} is empty" if source == "file" else
                f"environment variable {name} is not set or empty")
        return ""
    problem = check(value) if check else None
    if problem:
        r.error(ref.values[source], ref.at(source), f"the value read from {name}: {problem}")
        return ""
    return value


def _headers(r: Reader, m: Section, files: list[str]) -> tuple[tuple[str, str], ...]:
    section = r.section(m, "headers", None)
    out: list[tuple[str, str]] = []
    for name in section.values:
        if not name.strip():
            r.error(section.key_nodes[name], section.at(name), "header names must not be empty")
            continue
        out.append((name, _secret_text(r, section, name, files, required=False)))
    return tuple(out)


def _sink(r: Reader, node: yaml.Node, path: str, index: int, files: list[str]) -> SinkConfig:
    m = r.mapping(node, path, _SINK_KEYS)
    kind = r.text(m, "type", required=True)
    if kind and kind not in SINK_TYPES:
        r.error(m.values["type"], m.at("type"), f"unknown sink type {kind!r}; known: {', '.join(SINK_TYPES)}")
    d = SinkConfig(type=kind, url="")
    sink = SinkConfig(
        type=kind,
        url=_secret_text(r, m, "url", files, required=True, check=_url_problem),
        name=r.text(m, "name", f"{kind}-{index}", check=lambda s: None if s else "must not be empty"),
        timeout=r.duration(m, "timeout", d.timeout, positive=True),
        max_attempts=r.integer(m, "maxAttempts", d.max_attempts, minimum=1, maximum=MAX_ATTEMPTS),
        initial_backoff=r.duration(m, "initialBackoff", d.initial_backoff, floor=MIN_BACKOFF),
        max_backoff=r.duration(m, "maxBackoff", d.max_backoff),
        headers=_headers(r, m, files),
    )
    check_backoff(r, m, sink.initial_backoff, sink.max_backoff)
    return sink


def read_notifications(r: Reader, top: Section) -> Notifications:
    m = r.section(top, "notifications", _NOTIFICATIONS_KEYS)
    sinks: list[SinkConfig] = []
    files: list[str] = []
    for index, (node, path) in enumerate(r.sequence(m, "sinks") or []):
        sink = _sink(r, node, path, index, files)
        if any(s.name == sink.name for s in sinks):
            r.error(node, f"{path}.name", f"duplicate sink name {sink.name!r}; give each sink a distinct name")
        sinks.append(sink)
    # The queue holds alerts while sinks are slow; beyond this it is memory the remediator may not have.
    return Notifications(queue_size=r.integer(m, "queueSize", Notifications.queue_size, minimum=1,
                                              maximum=MAX_QUEUE_SIZE),
                         sinks=tuple(sinks), secret_files=tuple(dict.fromkeys(files)))
