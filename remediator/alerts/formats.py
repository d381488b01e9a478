"""How one Alert looks on the wire for each sink type: pure functions from an Alert to a JSON-serialisable body.

No I/O here (`notifier.py` posts what these return), so every format is tested without a network.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit, urlunsplit

from remediator.alerts.alert import Alert

SOURCE = "nodemedic"
ALERTNAME = "NodemedicRemediation"
ALERTMANAGER_PATH = "/api/v2/alerts"
# A remediation is a point in time and nobody will ever send a "resolved" for it. Without endsAt, Alertmanager
# resolves an alert after its resolve_timeout (5m by default), which can end before a route's group_wait /
# group_interval has flushed it, so it might never be delivered. One hour is long enough for any sane routing
# and for a human to see it in the Alertmanager UI; after that it resolves on its own.
ALERTMANAGER_RESOLVE_AFTER = dt.timedelta(hours=1)

# Slack Block Kit limits: section text 3000 characters, field text 2000, at most 10 fields per section.
SLACK_SECTION_TEXT_MAX = 3000
SLACK_FIELD_TEXT_MAX = 2000
SLACK_FIELDS_MAX = 10


def rfc3339(moment: dt.datetime) -> str:
    """`2025-01-01T12:00:00.000Z`: UTC with a literal Z, millisecond precision so events in one second keep order."""
    return moment.astimezone(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def webhook(alert: Alert, *, cluster: str) -> dict[str, object]:
    return {
        "kind": str(alert.kind),
        "severity": alert.severity,
        "summary": alert.summary,
        "node": alert.node,
        "namespace": alert.namespace,
        "pod": alert.pod,
        "reason": alert.reason,
        "details": dict(alert.details),
        "time": rfc3339(alert.time),
        "cluster": cluster,
        "source": SOURCE,
    }


def _slack_escape(text: str) -> str:
    # Slack parses <...> as links and mentions in mrkdwn; these three are the only escapes it defines.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def slack(alert: Alert, *, cluster: str) -> dict[str, object]:
    """An incoming-webhook message: a plain `text` fallback (notifications, old clients) plus Block Kit blocks."""
    prefix = f"[{alert.severity.upper()}]"
    fallback = f"{prefix} {alert.kind}: {alert.summary}" + (f" (cluster {cluster})" if cluster else "")
    headline = f"*{_slack_escape(prefix)} {_slack_escape(str(alert.kind))}*\n{_slack_escape(alert.summary)}"
    facts = [
        ("Node", alert.node),
        ("Pod", f"{alert.namespace}/{alert.pod}" if alert.pod else ""),
        ("Namespace", alert.namespace if not alert.pod else ""),
        ("Reason", alert.reason),
        ("Cluster", cluster),
        *sorted(alert.details.items()),
    ]
    fields = [
        {"type": "mrkdwn", "text": _clip(f"*{_slack_escape(name)}*\n{_slack_escape(value)}", SLACK_FIELD_TEXT_MAX)}
        for name, value in facts
        if value
    ][:SLACK_FIELDS_MAX]
    blocks: list[dict[str, object]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": _clip(headline, SLACK_SECTION_TEXT_MAX)}},
    ]
    if fields:  # a section must carry text or at least one field; an empty fields list is rejected
        blocks.append({"type": "section", "fields": fields})
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": f"{SOURCE} | {rfc3339(alert.time)}"}]})
    return {"text": _clip(_slack_escape(fallback), SLACK_SECTION_TEXT_MAX), "blocks": blocks}


def alertmanager(alert: Alert, *, cluster: str) -> list[dict[str, object]]:
    """A list with one postable alert for Alertmanager's v2 API; labels identify it, so empty ones are left out."""
    labels = {
        "alertname": ALERTNAME,
        "kind": str(alert.kind),
        "severity": alert.severity,
        "node": alert.node,
        "namespace": alert.namespace,
        "pod": alert.pod,
        "reason": alert.reason,
        "cluster": cluster,
        "source": SOURCE,
    }
    return [{
        "labels": {name: value for name, value in labels.items() if value},
        "annotations": {**alert.details, "summary": alert.summary},  # the summary wins over a detail of that name
        "startsAt": rfc3339(alert.time),
        "endsAt": rfc3339(alert.time + ALERTMANAGER_RESOLVE_AFTER),
        "generatorURL": "",
    }]


def alertmanager_url(base: str) -> str:
    """The alerts endpoint under an Alertmanager base URL (which may have a path prefix or already be the endpoint)."""
    parts = urlsplit(base)
    path = parts.path.rstrip("/")
    if not path.endswith(ALERTMANAGER_PATH):
        path += ALERTMANAGER_PATH
    return urlunsplit(parts._replace(path=path))


def _as_given(url: str) -> str:
    return url


class Renderer(Protocol):
    def __call__(self, alert: Alert, *, cluster: str) -> object: ...


@dataclass(frozen=True)
class Format:
    render: Renderer
    endpoint: Callable[[str], str]  # the configured URL -> the URL to POST to


FORMATS: dict[str, Format] = {
    "webhook": Format(render=webhook, endpoint=_as_given),
    "slack": Format(render=slack, endpoint=_as_given),
    "alertmanager": Format(render=alertmanager, endpoint=alertmanager_url),
}
