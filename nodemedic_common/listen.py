"""The `--listen` flag both programs take: HOST:PORT, :PORT or [IPV6]:PORT, checked when the flags are parsed so a
mistyped value is a usage error (exit 2) instead of a traceback from the socket layer after start-up."""

from __future__ import annotations

import argparse
import ipaddress


def split_listen(listen: str) -> tuple[str, int]:
    """"0.0.0.0:9101", ":9101" (every IPv4 address) or "[::1]:9101" -> (host, port); ValueError otherwise."""
    host, sep, port = listen.rpartition(":")
    usage = f"--listen {listen!r}: must be HOST:PORT, :PORT or [IPV6]:PORT with a port from 0 to 65535"
    if not sep or not port.isascii() or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(usage)
    if host.startswith("["):
        if not host.endswith("]"):
            raise ValueError(usage)
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            raise ValueError(f"{usage}: {host[1:-1]!r} is not an IPv6 address") from None
        return host[1:-1], int(port)
    if ":" in host or "]" in host or any(c.isspace() for c in host):  # an IPv6 address needs its brackets
        raise ValueError(usage)
    return host or "0.0.0.0", int(port)


def listen_flag(value: str) -> str:
    """argparse `type=` for --listen: the value unchanged when split_listen accepts it ('' disables serving)."""
    if value:
        try:
            split_listen(value)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e).removeprefix(f"--listen {value!r}: ")) from None
    return value
