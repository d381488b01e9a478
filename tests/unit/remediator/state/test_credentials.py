"""The remediator's credentials: the kubeconfig reader both programs share, the `kubernetes` package's loaders only for
a user that runs a credential plugin, checked before the first request, and handed to the shared client."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from nodemedic_common.kube_errors import CredentialsError
from remediator.state.credentials import load_credentials
from tests.unit.nodemedic_common.test_credential_files import hostile_kubeconfigs  # the reader it hands them to


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
    assert creds.token() == "abc"  # the client adds "Bearer "


def test_a_missing_kubeconfig_is_named(tmp_path: Path) -> None:
    with pytest.raises(CredentialsError, match=f"^{re.escape(str(tmp_path / 'absent'))}: kubeconfig file not found"):
        load_credentials(str(tmp_path / "absent"))


EXEC_USER = """apiVersion: v1
kind: Config
clusters:
- name: k
  cluster: {server: 'http://127.0.0.1:1'}
contexts:
- name: c
  context: {cluster: k, user: u}
current-context: c
users:
- name: u
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: %s
      interactiveMode: Never
"""


def test_a_user_with_an_exec_plugin_gets_the_plugins_token_through_the_kubernetes_package(tmp_path: Path) -> None:
    plugin = tmp_path / "get-token"
    answer = json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                         "status": {"token": "from-the-plugin", "expirationTimestamp": "2099-01-01T00:00:00Z"}})
    plugin.write_text(f"#!/bin/sh\necho '{answer}'\n")
    plugin.chmod(0o755)
    path = tmp_path / "kubeconfig"
    path.write_text(EXEC_USER % plugin)
    creds = load_credentials(str(path))
    assert creds.server == "http://127.0.0.1:1" and creds.token() == "Bearer from-the-plugin"


def test_without_the_kubernetes_package_a_plugin_user_is_refused_naming_the_field_and_the_way_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "kubernetes", None)  # as in the image, which carries none
    path = tmp_path / "kubeconfig"
    path.write_text(EXEC_USER % "aws")
    with pytest.raises(CredentialsError, match=r"users\[u\]\.exec: a credential plugin.*install nodemedic with pip"):
        load_credentials(str(path))


def test_a_plain_kubeconfig_and_the_service_account_never_import_the_kubernetes_package(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(EXEC_USER.replace("    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
                                      "      command: %s\n      interactiveMode: Never\n", "    token: abc\n"))
    code = ("import sys; from remediator.state.credentials import load_credentials; "
            f"load_credentials({str(path)!r}); print('kubernetes' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
