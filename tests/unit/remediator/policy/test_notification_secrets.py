"""Sink URLs and header values read from a file (a mounted Secret) or an environment variable; every error names
where the value came from and never the value."""

from __future__ import annotations

from pathlib import Path

import pytest

from remediator.controller import PolicySource
from remediator.policy.loader import PolicyError, load_policy, parse_policy

HEADER = "apiVersion: nodemedic.io/v1alpha1\nkind: RemediationPolicy\n"


def sinks(url: str, headers: str = "{}") -> str:
    return HEADER + f"notifications:\n  sinks:\n  - type: slack\n    url: {url}\n    headers: {headers}\n"


def errors(text: str) -> list[str]:
    with pytest.raises(PolicyError) as e:
        parse_policy(text, source="p.yaml")
    return e.value.errors


def test_the_url_comes_from_a_file_and_a_header_from_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "url").write_text("https://hooks.slack.com/services/T0/B0/s3cr3t\n")
    monkeypatch.setenv("ALERTS_TOKEN", "Bearer t0k3n")
    policy = parse_policy(sinks(f"{{file: {tmp_path / 'url'}}}", "{Authorization: {env: ALERTS_TOKEN}}"),
                          source="p.yaml")
    (sink,) = policy.notifications.sinks
    assert (sink.url, sink.headers) == ("https://hooks.slack.com/services/T0/B0/s3cr3t",
                                        (("Authorization", "Bearer t0k3n"),))
    assert "s3cr3t" not in repr(policy) and "t0k3n" not in repr(policy)


@pytest.mark.parametrize(("url", "headers", "expected"), [
    ("{file: /nonexistent/url}", "{}", "p.yaml:6: notifications.sinks[0].url.file: cannot read /nonexistent/url: "
                                        "No such file or directory"),
    ("{file: relative/url}", "{}", "p.yaml:6: notifications.sinks[0].url.file: must be an absolute path"),
    ("{env: NODEMEDIC_UNSET_VAR}", "{}", "p.yaml:6: notifications.sinks[0].url.env: environment variable "
                                         "NODEMEDIC_UNSET_VAR is not set or empty"),
    ("{file: /x, env: Y}", "{}", "p.yaml:6: notifications.sinks[0].url: give exactly one of file"),
    ("{secret: x}", "{}", "p.yaml:6: notifications.sinks[0].url.secret: unknown key"),
    ("https://h.example/x", "{Authorization: {env: NODEMEDIC_UNSET_VAR}}",
     "p.yaml:7: notifications.sinks[0].headers.Authorization.env: environment variable NODEMEDIC_UNSET_VAR"),
], ids=["missing-file", "relative-file", "unset-env", "both", "unknown-source", "header-env"])
def test_a_reference_that_cannot_be_read_names_its_source(url: str, headers: str, expected: str) -> None:
    got = errors(sinks(url, headers))
    assert any(e.startswith(expected) for e in got), got


def test_an_invalid_url_read_from_a_secret_is_refused_without_repeating_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOOK", "hooks.slack.com/services/T0/B0/s3cr3t")  # the scheme forgotten
    (got,) = errors(sinks("{env: HOOK}"))
    assert got.startswith("p.yaml:6: notifications.sinks[0].url.env: the value read from HOOK: invalid URL")
    assert "s3cr3t" not in got
    (inline,) = errors(sinks("ftp://hooks.slack.com/services/T0/B0/s3cr3t"))
    assert inline.startswith("p.yaml:6: notifications.sinks[0].url: invalid URL") and "s3cr3t" not in inline


def test_a_rotated_key_reloads_the_policy_and_a_removed_one_keeps_the_last_good(tmp_path: Path) -> None:
    key = tmp_path / "url"
    key.write_text("https://hooks.slack.com/services/T0/B0/old\n")
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(sinks(f"{{file: {key}}}"))
    source = PolicySource(str(policy_file), load_policy(policy_file))
    assert source.policy.notifications.secret_files == (str(key),)
    assert source.poll() == (False, [])

    key.write_text("https://hooks.slack.com/services/T0/B0/new\n")  # the kubelet swaps a Secret's files the same way
    assert source.poll() == (True, [])
    assert source.policy.notifications.sinks[0].url.endswith("/new")
    assert source.poll() == (False, [])

    key.unlink()
    changed, problems = source.poll()
    assert not changed and problems == [f"{policy_file}:6: notifications.sinks[0].url.file: cannot read {key}: "
                                        "No such file or directory"]
    assert source.policy.notifications.sinks[0].url.endswith("/new")
