"""The kubeconfig / in-cluster reader both programs share: what it accepts, and what it refuses with a clear error."""

from __future__ import annotations

import base64
import re
import ssl
import subprocess
from pathlib import Path

import pytest
import yaml

from nodemedic_common import credential_files as credentials
from nodemedic_common.kube_errors import CredentialsError


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("pki")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", str(d / "key.pem"), "-out", str(d / "cert.pem"), "-days", "1",
                    "-subj", "/CN=system:node:n1"], check=True, capture_output=True)
    return d


def kubeconfig(tmp_path: Path, cluster: dict, user: dict, *, context: str = "c") -> Path:
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": context,
           "clusters": [{"name": "k", "cluster": cluster}], "users": [{"name": "u", "user": user}],
           "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}]}
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return path


def b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def test_client_certificate_data_and_ca_data_load(tmp_path: Path, pki: Path) -> None:
    cluster = {"server": "https://127.0.0.1:6443/", "certificate-authority-data": b64(pki / "cert.pem")}
    user = {"client-certificate-data": b64(pki / "cert.pem"), "client-key-data": b64(pki / "key.pem")}
    path = kubeconfig(tmp_path, cluster, user)
    creds = credentials.from_kubeconfig(path)
    assert creds.server == "https://127.0.0.1:6443"
    assert isinstance(creds.ssl, ssl.SSLContext) and creds.ssl.cert_store_stats()["x509_ca"] == 1
    assert creds.token() is None
    assert not list(Path("/tmp").glob("nodemedic-cert-*")), "the temporary key file was left behind"


def test_file_paths_are_relative_to_the_kubeconfig(tmp_path: Path, pki: Path) -> None:
    for name in ("cert.pem", "key.pem"):
        (tmp_path / name).write_bytes((pki / name).read_bytes())
    path = kubeconfig(tmp_path, {"server": "https://h:1", "certificate-authority": "cert.pem"},
                      {"client-certificate": "cert.pem", "client-key": "key.pem"})
    assert credentials.from_kubeconfig(path).server == "https://h:1"


def test_a_token_file_is_reread_so_rotation_is_picked_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "token").write_text("one\n")
    insecure = {"server": "https://h:1", "insecure-skip-tls-verify": True}
    creds = credentials.from_kubeconfig(kubeconfig(tmp_path, insecure, {"tokenFile": "token"}))
    assert creds.ssl is False and creds.token() == "one"
    (tmp_path / "token").write_text("two\n")
    assert creds.token() == "one"  # cached for a minute
    monkeypatch.setattr(credentials, "TOKEN_REREAD_SECONDS", 0.0)
    assert creds.token() == "two"
    (tmp_path / "token").unlink()
    assert creds.token() == "two", "a token file missing mid-rotation keeps the last token"


@pytest.mark.parametrize(("cluster", "user", "message"), [
    ({"server": "https://h:1"}, {"exec": {"command": "aws"}}, "users[u].exec: a credential plugin, not supported"),
    ({"server": "https://h:1"}, {"auth-provider": {"name": "gcp"}},
     "users[u].auth-provider: a credential plugin, not supported"),
    ({"server": "h:1"}, {}, "clusters[k].server: not an http(s) URL"),
    ({"server": "https://h:1", "certificate-authority-data": "%%%"}, {}, "certificate-authority-data: not base64"),
    ({"server": "https://h:1"}, {"client-certificate": "missing.pem", "client-key": "missing.pem"},
     "client-certificate:"),
])
def test_unsupported_or_broken_kubeconfigs_name_the_field(tmp_path: Path, cluster: dict, user: dict,
                                                          message: str) -> None:
    path = kubeconfig(tmp_path, cluster, user)
    with pytest.raises(CredentialsError, match=re.escape(message)) as e:
        credentials.from_kubeconfig(path)
    assert str(path) in str(e.value)


def test_a_certificate_without_its_key_is_refused(tmp_path: Path, pki: Path) -> None:
    path = kubeconfig(tmp_path, {"server": "https://h:1"}, {"client-certificate-data": b64(pki / "cert.pem")})
    with pytest.raises(CredentialsError, match="client-certificate and client-key go together"):
        credentials.from_kubeconfig(path)


def test_an_unknown_context_or_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CredentialsError, match="contexts: no entry named 'nope'"):
        credentials.from_kubeconfig(kubeconfig(tmp_path, {"server": "https://h:1"}, {}, context="nope"))
    with pytest.raises(CredentialsError, match=f"^{re.escape(str(tmp_path / 'absent'))}: kubeconfig file not found$"):
        credentials.from_kubeconfig(tmp_path / "absent")


def test_in_cluster_uses_the_service_account_and_the_service_env(tmp_path: Path, pki: Path) -> None:
    (tmp_path / "token").write_text("sa-token")
    (tmp_path / "ca.crt").write_bytes((pki / "cert.pem").read_bytes())
    creds = credentials.in_cluster(tmp_path, {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"})
    assert creds.server == "https://[fd00::1]:443" and creds.token() == "sa-token"
    with pytest.raises(CredentialsError, match="not in a pod"):
        credentials.in_cluster(tmp_path, {})
    with pytest.raises(CredentialsError, match="no service-account token"):
        credentials.in_cluster(tmp_path / "nothing", {"KUBERNETES_SERVICE_HOST": "h", "KUBERNETES_SERVICE_PORT": "1"})


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
        credentials.from_kubeconfig(path)
