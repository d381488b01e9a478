"""Where the API server is and how to authenticate, read from the files that say it: a kubeconfig, or the pod's
service account. The agent's only source; the remediator's and the plugin's for every kubeconfig but one whose user
runs a plugin (remediator/state/credentials.py).

Not the `kubernetes` package's loaders: importing that package (and what it pulls in) costs a process about 20 MiB,
and it and its dependencies are 150 MiB of the image, for the few fields read here. Supported, which covers
kubeconfigs written for node agents, in-cluster pods and most people: `server`, `certificate-authority[-data]`,
`insecure-skip-tls-verify`, `client-certificate[-data]` + `client-key[-data]`, `token`, `tokenFile`. A user with
`exec` or `auth-provider` is PluginUser: the caller decides (the agent refuses it with this error).

The in-cluster token is a bound, rotating token: `TokenFile` re-reads its file (at most once a minute), as client-go
does.
"""

from __future__ import annotations

import base64
import os
import ssl
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from nodemedic_common.kube_credentials import Credentials
from nodemedic_common.kube_errors import CredentialsError

SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
TOKEN_REREAD_SECONDS = 60.0


class PluginUser(CredentialsError):
    """The kubeconfig's user authenticates through a plugin (`exec`, `auth-provider`): this reader runs none."""


class TokenFile:
    """A token kept in a file that its owner rewrites (a projected service-account token): `read` gives the one in it,
    re-read at most once every TOKEN_REREAD_SECONDS."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._cached: tuple[float, str] | None = None

    def read(self) -> str:
        now = time.monotonic()
        if self._cached is None or now - self._cached[0] > TOKEN_REREAD_SECONDS:
            try:
                self._cached = (now, self.path.read_text().strip())
            except OSError as e:
                if self._cached is None:
                    raise CredentialsError(f"{self.path}: {e.strerror or e}") from e
                # keep the last token: a rotation in progress must not break the next request
        return self._cached[1]


def load(kubeconfig: str | None) -> Credentials:
    """From `kubeconfig`, or the pod's service account when it is None."""
    return from_kubeconfig(kubeconfig) if kubeconfig else in_cluster()


def in_cluster(sa_dir: Path = SERVICE_ACCOUNT, environ: dict[str, str] | None = None) -> Credentials:
    env = os.environ if environ is None else environ
    host, port = env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        raise CredentialsError("not in a pod (KUBERNETES_SERVICE_HOST/PORT unset): pass --kubeconfig")
    if not (sa_dir / "token").exists():
        raise CredentialsError(f"no service-account token at {sa_dir / 'token'}: pass --kubeconfig")
    host = f"[{host}]" if ":" in host else host
    ctx = ssl.create_default_context(cafile=str(sa_dir / "ca.crt"))
    token = TokenFile(sa_dir / "token")
    token.read()  # fail now, not at the first request
    return Credentials(f"https://{host}:{port}", ctx, token.read)


def from_kubeconfig(path: str | Path, context: str | None = None) -> Credentials:
    """Every way a kubeconfig can be wrong (not UTF-8, a list where a mapping belongs, a number for a URL, a CA
    that is not a certificate) is a CredentialsError naming the file and field, never a traceback."""
    path = Path(path)
    doc = _read(path)
    name = context or doc.get("current-context")
    if not name:
        raise CredentialsError(f"{path}: current-context: not set")
    ctx = _mapping(_named(doc, "contexts", name, path).get("context"), f"contexts[{name}].context", path)
    cluster_name, user_name = ctx.get("cluster"), ctx.get("user")
    cluster = _mapping(_named(doc, "clusters", cluster_name, path).get("cluster"),
                       f"clusters[{cluster_name}].cluster", path)
    user = _mapping(_named(doc, "users", user_name, path).get("user") or {}, f"users[{user_name}].user", path)
    for unsupported in ("exec", "auth-provider"):
        if unsupported in user:
            raise PluginUser(f"{path}: users[{user_name}].{unsupported}: a credential plugin, not supported here; "
                             "use a client certificate or a token")
    server = _text(cluster, "server", f"clusters[{cluster_name}]", path).rstrip("/")
    if not server.startswith(("https://", "http://")):
        raise CredentialsError(f"{path}: clusters[{cluster_name}].server: not an http(s) URL: {server!r}")
    base = path.parent
    tls: ssl.SSLContext | bool
    if cluster.get("insecure-skip-tls-verify"):
        tls = False
    else:
        tls = _ssl_context(cluster, base, path, f"clusters[{cluster_name}]")
        cert = _pem(user, "client-certificate", base, path)
        key = _pem(user, "client-key", base, path)
        if (cert is None) != (key is None):
            raise CredentialsError(f"{path}: users[{user_name}]: client-certificate and client-key go together")
        if cert is not None and key is not None:
            _load_cert_chain(tls, cert, key)
    token_file = _text(user, "tokenFile", f"users[{user_name}]", path)
    if token_file:
        return Credentials(server, tls, TokenFile(base / token_file).read)
    token = _text(user, "token", f"users[{user_name}]", path) or None
    return Credentials(server, tls, lambda: token)


def _read(path: Path) -> dict[str, Any]:
    try:
        doc = yaml.safe_load(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise CredentialsError(f"{path}: kubeconfig file not found") from None
    except UnicodeDecodeError as e:
        raise CredentialsError(f"{path}: not UTF-8 text: byte 0x{e.object[e.start]:02x} at offset {e.start}") from None
    except (OSError, yaml.YAMLError) as e:
        raise CredentialsError(f"{path}: {e}") from e
    if not isinstance(doc, dict):
        raise CredentialsError(f"{path}: not a kubeconfig (expected a mapping)")
    return doc


def _mapping(value: object, where: str, path: Path) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise CredentialsError(f"{path}: {where}: must be a mapping")
    return value


def _text(entry: dict[str, Any], key: str, where: str, path: Path) -> str:
    value = entry.get(key) or ""
    if not isinstance(value, str):
        raise CredentialsError(f"{path}: {where}.{key}: must be a string")
    return value


def _named(doc: dict[str, Any], section: str, name: object, path: Path) -> dict[str, Any]:
    entries = doc.get(section) or []
    if not isinstance(entries, list):
        raise CredentialsError(f"{path}: {section}: must be a list")
    for entry in entries:
        if isinstance(entry, dict) and entry.get("name") == name:
            return entry
    raise CredentialsError(f"{path}: {section}: no entry named {name!r}")


def _ssl_context(cluster: dict[str, Any], base: Path, path: Path, where: str) -> ssl.SSLContext:
    if cluster.get("certificate-authority-data"):
        field_name, data = "certificate-authority-data", _b64(cluster["certificate-authority-data"],
                                                              "certificate-authority-data", path)
        try:
            return ssl.create_default_context(cadata=data.decode("ascii"))
        except (ssl.SSLError, ValueError) as e:  # not PEM, or no certificate in it
            raise CredentialsError(f"{path}: {where}.{field_name}: not a PEM CA certificate: {e}") from None
    ca_file = _text(cluster, "certificate-authority", where, path)
    try:
        return ssl.create_default_context(cafile=str(base / ca_file) if ca_file else None)
    except (ssl.SSLError, OSError) as e:
        raise CredentialsError(f"{path}: {where}.certificate-authority: {e}") from None


def _pem(user: dict[str, Any], key: str, base: Path, path: Path) -> bytes | None:
    if user.get(f"{key}-data"):
        return _b64(user[f"{key}-data"], f"{key}-data", path)
    if user.get(key):
        try:
            return (base / str(user[key])).read_bytes()
        except OSError as e:
            raise CredentialsError(f"{path}: {key}: {e}") from e
    return None


def _b64(value: object, field_name: str, path: Path) -> bytes:
    if not isinstance(value, str):
        raise CredentialsError(f"{path}: {field_name}: must be a base64 string")
    try:
        return base64.b64decode(value, validate=True)
    except ValueError as e:
        raise CredentialsError(f"{path}: {field_name}: not base64: {e}") from e


def _load_cert_chain(ctx: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    # ssl loads a client certificate only from files: write both to a private temporary file and remove it.
    fd, name = tempfile.mkstemp(prefix="nodemedic-cert-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(cert + b"\n" + key)
        ctx.load_cert_chain(name)
    except ssl.SSLError as e:
        raise CredentialsError(f"client certificate and key do not load: {e}") from e
    finally:
        os.unlink(name)
