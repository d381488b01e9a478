"""Where the API server is and how the client proves who it is, whichever source each program plugs in.

Both programs read kubeconfigs and the service account with nodemedic_common/credential_files.py; the remediator and
`kubectl nodemedic` run a kubeconfig's credential plugin through the `kubernetes` package
(remediator/state/credentials.py). Both hand the client (nodemedic_common/kube_client.py) this.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass


def no_token() -> str | None:
    return None


@dataclass(frozen=True)
class Credentials:
    server: str  # https://host:port (http:// in tests), without a trailing slash
    ssl: ssl.SSLContext | bool  # the cluster CA and any client certificate; False: insecure-skip-tls-verify
    # The bearer token now, with or without its "Bearer " prefix: called before each request, because bound
    # service-account tokens and exec plugins' tokens rotate.
    token: Callable[[], str | None] = no_token
