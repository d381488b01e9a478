"""The remediator's and `kubectl nodemedic`'s credentials: a kubeconfig or the in-cluster service account, resolved by
the `kubernetes` package's loaders (so exec plugins, auth providers, token files and embedded certificates all work),
and plugged into the client both programs share (nodemedic_common/kube_client.py); requests never go through the
package.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Callable

from kubernetes import client, config

from nodemedic_common.inputs import quoted
from nodemedic_common.kube_credentials import Credentials
from nodemedic_common.kube_errors import CredentialsError


def load_credentials(kubeconfig: str | None) -> Credentials:
    """From a kubeconfig file, or the pod's service account when `kubeconfig` is None."""
    cfg = client.Configuration()
    try:
        if kubeconfig:
            if not os.path.isfile(kubeconfig):  # the library's own message would not name the file
                raise CredentialsError(f"{kubeconfig}: kubeconfig file not found")
            config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
        else:
            config.load_incluster_config(client_configuration=cfg)
    except (config.ConfigException, OSError, ValueError, TypeError) as e:  # ValueError: also not UTF-8
        where = kubeconfig or "in-cluster credentials (pass --kubeconfig outside a pod)"
        raise CredentialsError(f"{where}: {e}") from None
    except (AttributeError, KeyError) as e:  # the library walks the file unchecked: a list or number out of place
        raise CredentialsError(f"{kubeconfig}: not a usable kubeconfig (a value of the wrong type): {e}") from None
    where = kubeconfig or "in-cluster credentials"
    # The library copies a kubeconfig's values through unchecked: a number or a list for the server or the token,
    # and CA data that is not a certificate, surface only here (or at the first request) unless checked now.
    if not isinstance(cfg.host, str) or not cfg.host.startswith(("https://", "http://")):
        raise CredentialsError(f"{where}: server: must be an http(s) URL, got {quoted(cfg.host)}")
    ctx: ssl.SSLContext | bool = False
    if cfg.verify_ssl:
        try:
            ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
            if cfg.cert_file:
                ctx.load_cert_chain(cfg.cert_file, cfg.key_file)
        except (ssl.SSLError, OSError) as e:
            raise CredentialsError(f"{where}: certificate-authority or client certificate does not load: {e}") from None
    token = cfg.api_key.get("authorization") or cfg.api_key.get("BearerToken")
    if token is not None and not isinstance(token, str):
        raise CredentialsError(f"{where}: token: must be a string")
    return Credentials(server=cfg.host.rstrip("/"), ssl=ctx, token=_token(cfg, token))


def _token(cfg: client.Configuration, static: str | None) -> Callable[[], str | None]:
    """The bearer token now: a bound service-account token and an exec plugin's are refreshed by the configuration's
    hook (it re-reads or re-runs when the last one expires), any other is the kubeconfig's own."""
    def refreshed() -> str | None:
        return cfg.get_api_key_with_prefix("authorization") or static

    return refreshed if cfg.refresh_api_key_hook else lambda: static
