"""Sink URLs and header values read from a file (a mounted Secret) or an environment variable; every error names
where the value came from and never the value."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nodemedic_common.config_errors import ConfigError
from remediator.cli import main
from remediator.policy.loader import load_policy, parse_policy
from remediator.policy.secret_files import MAX_SECRET_BYTES
from remediator.policy.source import PolicySource
from remediator.strategies import CATALOG

HEADER = "apiVersion: nodemedic.io/v1alpha1\nkind: RemediationPolicy\n"


def sinks(url: str, headers: str = "{}") -> str:
    return HEADER + f"notifications:\n  sinks:\n  - type: slack\n    url: {url}\n    headers: {headers}\n"


def errors(text: str) -> list[str]:
    with pytest.raises(ConfigError) as e:
        parse_policy(text, source="p.yaml", catalog=CATALOG)
    return e.value.errors


def test_the_url_comes_from_a_file_and_a_header_from_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "url").write_text("https://hooks.slack.com/services/T0/B0/s3cr3t\n")
    monkeypatch.setenv("ALERTS_TOKEN", "Bearer t0k3n")
    policy = parse_policy(sinks(f"{{file: {tmp_path / 'url'}}}", "{Authorization: {env: ALERTS_TOKEN}}"),
                          source="p.yaml", secrets_dir=str(tmp_path), catalog=CATALOG)
    (sink,) = policy.notifications.sinks
    assert (sink.url, sink.headers) == ("https://hooks.slack.com/services/T0/B0/s3cr3t",
                                        (("Authorization", "Bearer t0k3n"),))
    assert "s3cr3t" not in repr(policy) and "t0k3n" not in repr(policy)


@pytest.mark.parametrize(("url", "headers", "expected"), [
    ("{file: /etc/nodemedic/secrets/nonexistent-url}", "{}", "p.yaml:6: notifications.sinks[0].url.file: cannot "
     "read /etc/nodemedic/secrets/nonexistent-url: No such file or directory"),
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
    source = PolicySource(str(policy_file), load_policy(policy_file, secrets_dir=str(tmp_path), catalog=CATALOG),
                          secrets_dir=str(tmp_path), catalog=CATALOG)
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


# --- only regular files of bounded size under the secrets directory ----------------------------------------------
def file_errors(path: str, secrets_dir: Path, field: str = "url") -> list[str]:
    text = sinks(f"{{file: '{path}'}}") if field == "url" else \
        sinks("https://h.example/x", f"{{Authorization: {{file: '{path}'}}}}")
    with pytest.raises(ConfigError) as e:
        parse_policy(text, source="p.yaml", secrets_dir=str(secrets_dir), catalog=CATALOG)
    return e.value.errors


def test_a_file_outside_the_secrets_directory_is_refused_at_load_without_being_read(tmp_path: Path) -> None:
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    token = tmp_path / "token"  # as the service-account token: readable by the process, not a mounted Secret
    token.write_text("https://h.example/sa-t0k3n")
    (got,) = file_errors(str(token), secrets)
    assert got.startswith(f"p.yaml:6: notifications.sinks[0].url.file: {token} is outside the secrets directory "
                          f"{secrets} (--secrets-dir)"), got
    assert "sa-t0k3n" not in got
    (header,) = file_errors(str(token), secrets, field="headers")
    assert header.startswith("p.yaml:7: notifications.sinks[0].headers.Authorization.file: ")
    assert "outside the secrets directory" in header


def test_a_link_out_of_the_secrets_directory_and_dot_dot_are_refused(tmp_path: Path) -> None:
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (tmp_path / "token").write_text("https://h.example/sa-t0k3n")
    (secrets / "url").symlink_to(tmp_path / "token")
    (got,) = file_errors(str(secrets / "url"), secrets)
    assert f"{secrets / 'url'} (a link to {tmp_path / 'token'}) is outside the secrets directory" in got, got
    (dotdot,) = file_errors(f"{secrets}/../token", secrets)
    assert "is outside the secrets directory" in dotdot


def test_a_mounted_secret_s_links_inside_the_directory_are_followed(tmp_path: Path) -> None:
    """The kubelet mounts a Secret's key as a link into ..data/, itself a link to a timestamped directory."""
    (tmp_path / "..2026_01_01").mkdir()
    (tmp_path / "..2026_01_01" / "url").write_text("https://h.example/k3y\n")
    (tmp_path / "..data").symlink_to("..2026_01_01")
    (tmp_path / "url").symlink_to("..data/url")
    policy = parse_policy(sinks(f"{{file: {tmp_path / 'url'}}}"), source="p.yaml", secrets_dir=str(tmp_path),
                          catalog=CATALOG)
    assert policy.notifications.sinks[0].url == "https://h.example/k3y"


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "url")  # no writer: an open() for reading would wait for ever
    (got,) = file_errors(str(tmp_path / "url"), tmp_path)
    assert got == (f"p.yaml:6: notifications.sinks[0].url.file: {tmp_path / 'url'} is not a regular file (a FIFO, "
                   "device, socket or directory is never read)")


def test_a_device_is_refused_without_being_read(tmp_path: Path) -> None:
    (tmp_path / "url").symlink_to("/dev/zero")  # a link keeps it inside the directory by name only
    (got,) = file_errors(str(tmp_path / "url"), tmp_path)
    assert "is outside the secrets directory" in got
    (direct,) = file_errors("/dev/zero", Path("/dev"))  # an operator who set --secrets-dir=/dev
    assert direct.endswith("/dev/zero is not a regular file (a FIFO, device, socket or directory is never read)")


def test_a_file_over_the_size_bound_is_refused(tmp_path: Path) -> None:
    (tmp_path / "url").write_bytes(b"https://h.example/" + b"a" * MAX_SECRET_BYTES)
    (got,) = file_errors(str(tmp_path / "url"), tmp_path)
    assert got == (f"p.yaml:6: notifications.sinks[0].url.file: {tmp_path / 'url'} is larger than 64 KiB, the "
                   "bound on a secret file")


def test_a_rotated_key_that_became_a_fifo_keeps_the_last_good_policy_without_blocking(tmp_path: Path) -> None:
    key = tmp_path / "url"
    key.write_text("https://hooks.slack.com/services/T0/B0/old\n")
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(sinks(f"{{file: {key}}}"))
    source = PolicySource(str(policy_file), load_policy(policy_file, secrets_dir=str(tmp_path), catalog=CATALOG),
                          secrets_dir=str(tmp_path), catalog=CATALOG)
    key.unlink()
    os.mkfifo(key)
    changed, problems = source.poll()
    assert not changed and problems == [f"{policy_file}:6: notifications.sinks[0].url.file: {key} is not a regular "
                                        "file (a FIFO, device, socket or directory is never read)"]
    assert source.policy.notifications.sinks[0].url.endswith("/old")


def test_validate_takes_the_secrets_directory_from_its_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "url").write_text("https://h.example/k3y\n")
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(sinks(f"{{file: {tmp_path / 'url'}}}"))
    assert main(["validate", "--policy", str(policy_file)]) == 2
    assert "is outside the secrets directory /etc/nodemedic/secrets (--secrets-dir)" in capsys.readouterr().err
    assert main(["validate", "--policy", str(policy_file), "--secrets-dir", str(tmp_path)]) == 0


# --- a secret in the wrong place is never quoted ---------------------------------------------------------------
@pytest.mark.parametrize(("url", "headers", "secret"), [
    ("12345678901234567890", "{}", "12345678901234567890"),  # a token pasted unquoted into the URL field
    ("https://h.example/x", "{Authorization: 98765432109876}", "98765432109876"),
    ("https://h.example/x", "{Authorization: 2026-01-01 12:00:00}", "2026"),
    ("https://h.example/x", "{Authorization: [Bearer s3cr3tl1st]}", "s3cr3tl1st"),
], ids=["url-number", "header-number", "header-timestamp", "header-list"])
def test_a_sink_value_of_the_wrong_type_is_refused_without_quoting_it(url: str, headers: str, secret: str) -> None:
    (got,) = errors(sinks(url, headers))
    assert "must be a string" in got and "not shown: it may be a credential" in got, got
    assert secret not in got and "quote it" not in got


def test_a_prometheus_url_with_a_credential_is_refused_without_quoting_it() -> None:
    text = HEADER + """strategies:
- name: LowNodeUtilization
  args:
    thresholds: {MetricResource: 20}
    targetThresholds: {MetricResource: 50}
    metricsUtilization: {source: Prometheus, prometheus: {query: 'up'}}
metricsProviders:
- source: Prometheus
  prometheus: {url: 'prometheus.example/api?access_token=pr0ms3cr3t'}
"""
    (got,) = errors(text)
    assert got.startswith("p.yaml:11: metricsProviders[0].prometheus.url: must be an http:// or https:// URL with a "
                          "host"), got
    assert "pr0ms3cr3t" not in got
