"""Whether a server name from a configuration file reaches the node itself, as the C library would resolve it.

Measuring the clock against such a server measures the node against its own time daemon. The class is closed by
reading the name the way the resolver does, not by listing spellings:

- IPv4 in every form inet_aton(3) accepts (glibc's getaddrinfo and musl's read numeric hosts with it): one to four
  dot-separated parts, each decimal, octal (a leading 0) or hexadecimal (0x), the last filling the remaining bytes,
  so `127.1`, `0x7f.1`, `0177.0.0.1` and `2130706433` are all 127.0.0.1. Any 127/8 address is loopback (ntpd's
  reference-clock pseudo-addresses 127.127.t.u among them), and 0.0.0.0, which Linux delivers to the node itself.
- IPv6: ::1 and :: (the same for IPv6), and an IPv4-mapped (::ffff:a.b.c.d) or IPv4-compatible (::a.b.c.d)
  address whose IPv4 address is one of the above; a zone (`%eth0`) changes nothing.
- Names: `localhost` and every name under it (RFC 6761: `ntp.localhost`), with or without the root's trailing dot,
  in any case, and the loopback aliases distributions put in /etc/hosts (RHEL's `localhost4`/`localhost6` forms,
  Debian's `ip6-localhost`, `ip6-loopback`). Other names are not resolved here: that would ask DNS on every read.
"""

from __future__ import annotations

import ipaddress
import re

# inet_aton's parts: strtoul(3) with base 0 after a leading digit; "08" or "0x" end the number early, which
# inet_aton then rejects as trailing garbage, so neither is a part.
_PART = re.compile(r"0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*")
_LAST_PART_MAX = (0xFFFFFFFF, 0xFFFFFF, 0xFFFF, 0xFF)  # by the number of parts before it
_LOOPBACK_ALIASES = frozenset({"localhost.localdomain", "localhost4", "localhost4.localdomain4", "localhost6",
                               "localhost6.localdomain6", "ip6-localhost", "ip6-loopback"})


def reaches_this_node(host: str) -> bool:
    """True when `host` (a name, an IPv4 address in any inet_aton spelling, or an IPv6 address) is the node."""
    if ":" in host:
        try:
            v6 = ipaddress.IPv6Address(host.partition("%")[0])
        except ValueError:
            return False  # not an address; the caller tells garbage apart
        if v6.ipv4_mapped is not None:
            return _is_this_node_v4(v6.ipv4_mapped)
        if int(v6) >> 32 == 0:  # ::/96: ::, ::1, and the IPv4-compatible ::a.b.c.d
            return int(v6) <= 1 or _is_this_node_v4(ipaddress.IPv4Address(int(v6)))
        return False
    if (v4 := inet_aton(host)) is not None:
        return _is_this_node_v4(v4)
    name = host.lower().removesuffix(".")
    return name == "localhost" or name.endswith(".localhost") or name in _LOOPBACK_ALIASES


def inet_aton(text: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address inet_aton(3) reads in `text`, None when it reads none (a host name)."""
    parts = text.split(".")
    if len(parts) > 4 or not all(_PART.fullmatch(p) for p in parts):
        return None
    values = [int(p, _base(p)) for p in parts]
    *leading, last = values
    if any(v > 0xFF for v in leading) or last > _LAST_PART_MAX[len(leading)]:
        return None
    value = last
    for shift, v in zip((24, 16, 8), leading, strict=False):
        value |= v << shift
    return ipaddress.IPv4Address(value)


def _base(part: str) -> int:
    if part[:2] in ("0x", "0X"):
        return 16
    return 8 if part.startswith("0") else 10


def _is_this_node_v4(address: ipaddress.IPv4Address) -> bool:
    return address.is_loopback or address == ipaddress.IPv4Address(0)
