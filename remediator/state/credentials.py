"""The remediator's and `kubectl nodemedic`'s credentials, handed to the client both programs share
(nodemedic_common/kube_client.py): the pod's service account or a kubeconfig, read by
nodemedic_common/credential_files.py; a kubeconfig whose user runs a credential plugin (`exec`: `aws eks get-token`,
`gke-gcloud-auth-plugin`, `kubelogin`; or a legacy `auth-provider`) through the `kubernetes` package's loaders,
imported only then. The image carries no `kubernetes` package (150 MiB, and about 20 MiB in each process that
imports it): in a pod it is never needed, and there the plugin's command would not be either. Requests never go
through the package.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from typing import Any

from nodemedic_common import credential_files
from nodemedic_common.inputs import quoted
from nodemedic_common.kube_credentials import Credentials
from nodemedic_common.kube_errors import CredentialsError


def load_credentials(kubeconfig: str | None) -> Credentials:
    """From a kubeconfig file, or the pod's service account when `kubeconfig` is None."""
    if not kubeconfig:
        return credential_files.in_cluster()
    try:
        return credential_files.from_kubeconfig(kubeconfig)
    except credential_files.PluginUser as plugin:
        return _through_plugin(kubeconfig, plugin)


def _through_plugin(kubeconfig: str, plugin: credential_files.PluginUser) -> Credentials:
    try:
        from kubernetes import client, config  # noqa: PLC0415 - only for a credential plugin: see the docstring
    except ImportError:
        raise CredentialsError(f"{plugin}; or install nodemedic with pip, which brings the `kubernetes` package that "
                               "runs credential plugins (the image has none)") from None
    cfg = client.Configuration()
    try:
        config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
    except (config.ConfigException, OSError, ValueError, TypeError) as e:
        raise CredentialsError(f"{kubeconfig}: {e}") from None
    except (AttributeError, KeyError) as e:  # the library walks the file unchecked: a list or number out of place
        raise CredentialsError(f"{kubeconfig}: not a usable kubeconfig (a value of the wrong type): {e}") from None
    # The library copies a kubeconfig's values through unchecked: a number or a list for the server or the token,
    # and CA data that is not a certificate, surface only here (or at the first request) unless checked now.
    if not isinstance(cfg.host, str) or not cfg.host.startswith(("https://", "http://")):
        raise CredentialsError(f"{kubeconfig}: server: must be an http(s) URL, got {quoted(cfg.host)}")
    ctx: ssl.SSLContext | bool = False
    if cfg.verify_ssl:
        try:
            ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
            if cfg.cert_file:
                ctx.load_cert_chain(cfg.cert_file, cfg.key_file)
        except (ssl.SSLError, OSError) as e:
            raise CredentialsError(f"{kubeconfig}: certificate-authority or client certificate does not load: "
                                   f"{e}") from None
    token = cfg.api_key.get("authorization") or cfg.api_key.get("BearerToken")
    if token is not None and not isinstance(token, str):
        raise CredentialsError(f"{kubeconfig}: token: must be a string")
    return Credentials(server=cfg.host.rstrip("/"), ssl=ctx, token=_token(cfg, token))


def _token(cfg: Any, static: str | None) -> Callable[[], str | None]:
    """The bearer token now: a plugin's is refreshed by the configuration's hook (it re-runs the plugin when the last
    token expires), any other is the kubeconfig's own."""
    def refreshed() -> str | None:
        token: str | None = cfg.get_api_key_with_prefix("authorization")
        return token or static

    return refreshed if cfg.refresh_api_key_hook else lambda: static
