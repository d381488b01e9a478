"""A throwaway PKI for one local cluster, made with the openssl CLI (EC keys: fast to generate)."""

from __future__ import annotations

import subprocess
from pathlib import Path

SERVER_SANS = (
    "IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,"
    "DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
)


def _openssl(*args: str, cwd: Path) -> None:
    proc = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)} failed: {proc.stderr.strip()}")


def _key(name: str, cwd: Path) -> None:
    _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", f"{name}.key", cwd=cwd)


def _signed(name: str, subject: str, ext: str, cwd: Path) -> None:
    _key(name, cwd)
    _openssl("req", "-new", "-key", f"{name}.key", "-out", f"{name}.csr", "-subj", subject, cwd=cwd)
    (cwd / f"{name}.ext").write_text(ext)
    _openssl(
        "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", f"{name}.crt", "-days", "3650", "-extfile", f"{name}.ext", cwd=cwd,
    )


def client_cert(pki: Path, name: str, user: str, groups: tuple[str, ...] = ()) -> tuple[Path, Path]:
    """A client certificate for `user` in `groups`, signed by the cluster CA (for RBAC tests)."""
    subject = "".join(f"/O={g}" for g in groups) + f"/CN={user}"
    _signed(name, subject, "extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature\n", pki)
    return pki / f"{name}.crt", pki / f"{name}.key"


def server_cert(pki: Path, name: str, common_name: str, sans: str) -> tuple[Path, Path]:
    """A serving certificate for `sans` (openssl subjectAltName syntax), signed by the cluster CA."""
    _signed(name, f"/CN={common_name}", f"subjectAltName={sans}\nextendedKeyUsage=serverAuth\n"
            "keyUsage=digitalSignature\n", pki)
    return pki / f"{name}.crt", pki / f"{name}.key"


def make(pki: Path, extra_sans: str = "") -> None:
    """CA, apiserver serving cert (also for `extra_sans`: a real node's pods reach it at the node's address),
    admin client cert (system:masters), the API server's client cert for kubelets, service-account signing key."""
    pki.mkdir(parents=True, exist_ok=True)
    _key("ca", pki)
    _openssl(
        "req", "-x509", "-new", "-key", "ca.key", "-out", "ca.crt", "-days", "3650", "-subj", "/CN=nodemedic-local-ca",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        cwd=pki,
    )
    server_cert(pki, "apiserver", "kube-apiserver", SERVER_SANS + (f",{extra_sans}" if extra_sans else ""))
    client_cert(pki, "admin", "kubernetes-admin", ("system:masters",))
    # kube-apiserver -> kubelet (logs, exec, metrics): the kubelet's webhook authorization asks RBAC about it.
    client_cert(pki, "apiserver-kubelet-client", "kube-apiserver-kubelet-client", ("system:masters",))
    # The aggregation layer's front proxy (apiserver -> extension apiservers): its CA must be set, or every
    # component logs "missing content for CA bundle ... requestheader-client-ca-file" forever.
    client_cert(pki, "front-proxy-client", "front-proxy-client")
    _key("sa", pki)
    _openssl("ec", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)
