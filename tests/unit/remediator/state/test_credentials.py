"""The remediator's credentials: a kubeconfig the `kubernetes` package's loaders resolve, checked before the first
request, and handed to the shared client."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nodemedic_common.kube_errors import CredentialsError
from remediator.state.credentials import load_credentials

NOT_A_CERT = "bm90IGEgY2VydA=="  # base64 of "not a cert"


def hostile_kubeconfigs() -> dict[str, bytes]:
    """Kubeconfigs that are wrong in type, encoding or certificate data, by what is wrong."""
    def doc(cluster: str, user: str = "{token: abc}") -> bytes:
        return (f"apiVersion: v1\nkind: Config\nclusters:\n- name: k\n  cluster: {cluster}\ncontexts:\n- name: c\n"
                f"  context: {{cluster: k, user: u}}\ncurrent-context: c\nusers:\n- name: u\n  user: {user}\n"
                ).encode()
    return {
        "CA data not a certificate": doc("{server: 'https://127.0.0.1:1', "
                                         f"certificate-authority-data: {NOT_A_CERT}}}"),
        "server a list": doc("{server: [1, 2]}"),
        "clusters a number": b"apiVersion: v1\nclusters: 5\ncurrent-context: c\ncontexts: 5\n",
        "not UTF-8": b"apiVersion: v1\nclusters:\n- \xff\xfe\n",
    }


@pytest.mark.parametrize("content", list(hostile_kubeconfigs().values()), ids=list(hostile_kubeconfigs()))
def test_a_hostile_kubeconfig_is_a_credentials_error_naming_the_file(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "kubeconfig"
    path.write_bytes(content)
    with pytest.raises(CredentialsError, match=f"^{re.escape(str(path))}: "):
        load_credentials(str(path))


def test_a_kubeconfigs_server_and_token_reach_the_credentials(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text("apiVersion: v1\nkind: Config\nclusters:\n- name: k\n  cluster: {server: 'http://127.0.0.1:1/'}\n"
                    "contexts:\n- name: c\n  context: {cluster: k, user: u}\ncurrent-context: c\n"
                    "users:\n- name: u\n  user: {token: abc}\n")
    creds = load_credentials(str(path))
    assert creds.server == "http://127.0.0.1:1"
    assert creds.token() == "Bearer abc"  # the client sends it as it is


def test_a_missing_kubeconfig_is_named(tmp_path: Path) -> None:
    with pytest.raises(CredentialsError, match=f"^{re.escape(str(tmp_path / 'absent'))}: kubeconfig file not found"):
        load_credentials(str(tmp_path / "absent"))
