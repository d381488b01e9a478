"""The names the plugin puts in a URL path: a node, a namespace, the leader's pod and Lease, its port.

Each is checked before any request: a name from the command line (`why ../../metrics`) or from the cluster (a
Lease's holder identity is written by whoever may update that Lease) must never make the plugin read another path
through the API server with the user's credentials.
"""

from __future__ import annotations

import re

DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")  # nodes, pods, Leases
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")  # namespaces
PORT = re.compile(r"[0-9]{1,5}")


class BadName(Exception):
    """A name on the command line that cannot be what it names; nothing was asked."""


def node_name(text: str) -> str:
    if not DNS_SUBDOMAIN.fullmatch(text):
        raise BadName(f"{text!r} is not a node name")
    return text


def namespace(text: str) -> str:
    if not DNS_LABEL.fullmatch(text):
        raise BadName(f"{text!r} is not a namespace name")
    return text
