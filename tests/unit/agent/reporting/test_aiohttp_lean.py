"""The agent's aiohttp carries no CA stores, whichever module of the agent is imported first: the shared client
(nodemedic_common/kube_client.py) imports aiohttp itself, and the reporting package imports the lean one before it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


@pytest.mark.parametrize("first", ["agent.cli", "agent.reporting.reporter", "agent.reporting.pod_watch",
                                   "agent.reporting.node_watch"])
def test_the_shared_client_leaves_the_agents_aiohttp_lean_whichever_module_comes_first(first: str) -> None:
    probe = (f"import {first}\n"
             "import aiohttp.connector as c\n"
             "print(c._SSL_CONTEXT_VERIFIED.cert_store_stats()['x509_ca'])\n")
    clean = {k: v for k, v in os.environ.items() if k not in ("SSL_CERT_FILE", "SSL_CERT_DIR")}
    out = subprocess.run([sys.executable, "-c", probe], env=clean, capture_output=True, text=True, timeout=60,
                         check=True).stdout.split()
    assert out == ["0"], f"importing {first} loaded aiohttp's CA stores"

