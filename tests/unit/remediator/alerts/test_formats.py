"""How an alert looks on the wire for each sink type (pure functions: no network)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from remediator.alerts.alert import Alert, AlertKind
from remediator.alerts.formats import FORMATS, alertmanager_url

NOW = dt.datetime(2025, 1, 1, 12, 0, 0, 250000, tzinfo=dt.UTC)


def alert(**changes: Any) -> Alert:
    base: dict[str, Any] = {"kind": AlertKind.EVICTED, "severity": "warning", "summary": "evicted app/web-1 from n1",
                            "node": "n1", "namespace": "app", "pod": "web-1", "reason": "PDB",
                            "details": {"rule": "kubelet-down"}, "time": NOW}
    return Alert(**(base | changes))


def test_the_webhook_body_carries_every_alert_field_with_an_rfc3339_utc_time() -> None:
    local = NOW.astimezone(dt.timezone(dt.timedelta(hours=2)))
    assert FORMATS["webhook"].render(alert(time=local), cluster="prod-eu") == {
        "kind": "Evicted", "severity": "warning", "summary": "evicted app/web-1 from n1", "node": "n1",
        "namespace": "app", "pod": "web-1", "reason": "PDB", "details": {"rule": "kubelet-down"},
        "time": "2025-01-01T12:00:00.250Z", "cluster": "prod-eu", "source": "nodemedic",
    }


def test_the_slack_body_is_a_text_fallback_plus_block_kit_sections() -> None:
    body = FORMATS["slack"].render(alert(summary="a <b> & c"), cluster="prod-eu")
    assert isinstance(body, dict)
    assert body["text"] == "[WARNING] Evicted: a &lt;b&gt; &amp; c (cluster prod-eu)"
    headline, facts, context = body["blocks"]
    assert headline == {"type": "section", "text": {"type": "mrkdwn", "text": "*[WARNING] Evicted*\n"
                                                                               "a &lt;b&gt; &amp; c"}}
    assert facts["type"] == "section"
    assert [f["text"] for f in facts["fields"]] == ["*Node*\nn1", "*Pod*\napp/web-1", "*Reason*\nPDB",
                                                    "*Cluster*\nprod-eu", "*rule*\nkubelet-down"]
    assert all(f["type"] == "mrkdwn" for f in facts["fields"])
    assert context == {"type": "context", "elements": [{"type": "mrkdwn",
                                                        "text": "nodemedic | 2025-01-01T12:00:00.250Z"}]}


def test_a_slack_alert_without_facts_has_no_empty_fields_section_and_at_most_ten_fields_otherwise() -> None:
    bare = FORMATS["slack"].render(Alert(kind=AlertKind.BREAKER_OPEN, severity="critical", summary="breaker open",
                                 time=NOW), cluster="")
    assert isinstance(bare, dict)
    assert [b["type"] for b in bare["blocks"]] == ["section", "context"]
    assert bare["text"] == "[CRITICAL] CircuitBreakerOpen: breaker open"
    crowded = FORMATS["slack"].render(alert(details={f"k{i:02}": "v" for i in range(20)}), cluster="c")
    assert isinstance(crowded, dict)
    assert len(crowded["blocks"][1]["fields"]) == 10


def test_the_alertmanager_body_is_one_alert_with_string_labels_and_empty_ones_left_out() -> None:
    body = FORMATS["alertmanager"].render(alert(node="", details={"rule": "r", "summary": "not me"}),
                  cluster="prod-eu")
    assert body == [{
        "labels": {"alertname": "NodemedicRemediation", "kind": "Evicted", "severity": "warning",
                   "namespace": "app", "pod": "web-1", "reason": "PDB", "cluster": "prod-eu", "source": "nodemedic"},
        "annotations": {"rule": "r", "summary": "evicted app/web-1 from n1"},
        "startsAt": "2025-01-01T12:00:00.250Z",
        "endsAt": "2025-01-01T13:00:00.250Z",  # ALERTMANAGER_RESOLVE_AFTER: resolves on its own an hour later
        "generatorURL": "",
    }]


@pytest.mark.parametrize(("configured", "posted"), [
    ("http://am:9093", "http://am:9093/api/v2/alerts"),
    ("http://am:9093/", "http://am:9093/api/v2/alerts"),
    ("http://am:9093/api/v2/alerts", "http://am:9093/api/v2/alerts"),
    ("http://am:9093/api/v2/alerts/", "http://am:9093/api/v2/alerts"),
    ("https://mon.example/alertmanager", "https://mon.example/alertmanager/api/v2/alerts"),
    ("http://am:9093/?tenant=a", "http://am:9093/api/v2/alerts?tenant=a"),
], ids=["base", "trailing-slash", "already-the-endpoint", "endpoint-trailing-slash", "path-prefix", "query-kept"])
def test_the_alertmanager_endpoint_is_appended_to_the_base_url_once(configured: str, posted: str) -> None:
    assert alertmanager_url(configured) == posted
