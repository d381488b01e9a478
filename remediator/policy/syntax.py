"""Syntax checks of Kubernetes names that several sections share: each returns the problem, or None."""

from __future__ import annotations

import re

_LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def qualified_name_problem(key: str) -> str | None:
    """Label and taint keys: an optional DNS-subdomain prefix and "/", then a name of up to 63 characters."""
    prefix, slash, name = key.rpartition("/")
    if slash and (len(prefix) > 253 or not DNS_SUBDOMAIN.fullmatch(prefix)):
        return f"invalid key {key!r}: the prefix before '/' must be a lowercase DNS subdomain (e.g. nodemedic.io)"
    if len(name) > 63 or not _LABEL_NAME.fullmatch(name):
        return (f"invalid key {key!r}: the name must be 1-63 characters of A-Z, a-z, 0-9, '-', '_', '.', "
                "starting and ending with a letter or digit")
    return None


def label_value_problem(value: str) -> str | None:
    if value and (len(value) > 63 or not _LABEL_NAME.fullmatch(value)):
        return (f"invalid value {value!r}: at most 63 characters of A-Z, a-z, 0-9, '-', '_', '.', "
                "starting and ending with a letter or digit")
    return None


def namespace_problem(name: str) -> str | None:
    if len(name) > 63 or not _DNS_LABEL.fullmatch(name):
        return f"invalid namespace {name!r}: must be a lowercase DNS label"
    return None
