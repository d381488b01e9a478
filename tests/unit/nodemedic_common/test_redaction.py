"""A secret is cut from text in every form it reaches a log in: raw, JSON-escaped, percent-encoded, base64, and as
the userinfo of any URL."""

from __future__ import annotations

import base64
import json
from urllib.parse import quote, quote_plus

import pytest

from nodemedic_common.redaction import REDACTED, header_secrets, redact, url_secrets

URL = "https://hooks.example/services/T0/B0/s3cr3tT0k3n?key=q%2Fv4lu3"


def test_the_raw_url_is_cut() -> None:
    assert redact(f"POST {URL} failed", url_secrets(URL)) == f"POST {REDACTED} failed"


def test_the_url_json_escaped_with_escaped_slashes_is_cut() -> None:
    body = json.dumps({"error": "bad", "url": URL}).replace("/", "\\/")  # as PHP and some proxies echo it
    assert "s3cr3tT0k3n" not in redact(body, url_secrets(URL))


def test_the_token_part_alone_is_cut() -> None:
    assert redact("no such hook: s3cr3tT0k3n", url_secrets(URL)) == f"no such hook: {REDACTED}"
    assert "s3cr3tT0k3n" not in redact("hook B0/s3cr3tT0k3n gone", url_secrets(URL))


def test_the_url_percent_encoded_is_cut() -> None:
    for encoded in (quote(URL, safe=""), quote_plus(URL), quote("s3cr3tT0k3n/x", safe="")):
        got = redact(f"redirect_to={encoded}", url_secrets(URL))
        assert "s3cr3tT0k3n" not in got, got


def test_a_query_value_is_cut_as_written_and_decoded() -> None:
    text = "key q%2Fv4lu3 or q/v4lu3"
    assert redact(text, url_secrets(URL)) == f"key {REDACTED} or {REDACTED}"


def test_userinfo_and_its_basic_credential_are_cut() -> None:
    url = "https://alice:p%40ssw0rd@alerts.example/hook"
    basic = base64.b64encode(b"alice:p@ssw0rd").decode()
    text = f"echo: Authorization: Basic {basic}; password p@ssw0rd; at {url}"
    got = redact(text, url_secrets(url))
    assert "p@ssw0rd" not in got and "p%40ssw0rd" not in got and basic not in got, got


def test_userinfo_of_any_url_is_cut_even_when_unknown() -> None:
    text = 'connect to https://bob:hunter2x@other.example/x and "https:\\/\\/bob:hunter2x@other.example"'
    got = redact(text, [])
    assert got == (f'connect to https://{REDACTED}@other.example/x and "https:\\/\\/{REDACTED}@other.example"')


def test_a_basic_header_is_cut_encoded_and_decoded() -> None:
    value = "Basic " + base64.b64encode(b"svc:t0ps3cr3t").decode()
    got = redact(f"{value} / svc:t0ps3cr3t / t0ps3cr3t", header_secrets(value))
    assert "t0ps3cr3t" not in got and value.split()[1] not in got, got


@pytest.mark.parametrize("form", [
    "b3BhcXVlLXRva2VuL3YxKzI=",  # base64 of the token below
    "b3BhcXVlLXRva2VuL3YxKzI",  # unpadded
    "b3BhcXVlLXRva2VuL3YxKzI=".replace("+", "-").replace("/", "_"),  # URL-safe
    "opaque-token\\/v1+2",  # JSON with \/
    "opaque-token%2Fv1%2B2",  # percent-encoded
], ids=["base64", "unpadded", "urlsafe", "json", "percent"])
def test_a_bearer_token_is_cut_in_each_form(form: str) -> None:
    assert base64.b64encode(b"opaque-token/v1+2").decode() == "b3BhcXVlLXRva2VuL3YxKzI="
    assert redact(f"x {form} y", header_secrets("Bearer opaque-token/v1+2")) == f"x {REDACTED} y"


def test_short_values_are_left_alone() -> None:
    assert redact("X-Debug: 1", header_secrets("1")) == "X-Debug: 1"
