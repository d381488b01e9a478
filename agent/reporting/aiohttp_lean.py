"""aiohttp for the agent, imported without the two CA stores it would build and never be asked to use.

When aiohttp is imported it creates two default SSL contexts, each loading the system CA bundle: about 2 MiB of
the agent's 40 MiB budget, on every node. The agent never uses them: its API server connection carries the
cluster CA (kubeconfig or service account, `agent.reporting.credentials`), and the kubelet probe builds its own
context when its URL is https. So the import runs with OpenSSL's CA locations pointed at a path that cannot exist (its
documented SSL_CERT_FILE/SSL_CERT_DIR variables, restored right after); `agent/reporting/__init__.py` imports this
before any module of the reporting side loads the shared client. If aiohttp was imported earlier by someone else,
this changes nothing.
"""

from __future__ import annotations

import os

_CA_VARIABLES = ("SSL_CERT_FILE", "SSL_CERT_DIR")
_saved = {name: os.environ.get(name) for name in _CA_VARIABLES}
try:
    for _name in _CA_VARIABLES:
        os.environ[_name] = "/dev/null/no-ca"  # a path below a character device: never a file or directory
    import aiohttp
finally:
    for _name, _value in _saved.items():
        if _value is None:
            os.environ.pop(_name, None)
        else:
            os.environ[_name] = _value

__all__ = ["aiohttp"]
