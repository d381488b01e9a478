"""Whether a firewall dump would print what the last one printed, told without running it.

The firewall check's four dump processes (`iptables-{legacy,nft}-save`, IPv4 and IPv6) cost ~9 ms of CPU a look,
the agent's share and the children's, where the whole agent pod takes ~40 ms in two minutes; for rules that change a
few times a day on most nodes. Two answers from the kernel say when a dump is not needed:

- nf_tables counts its committed transactions: the ruleset generation (`NFT_MSG_GETGEN` over nfnetlink, the number
  `nft monitor` and `nft list ruleset` report). Every change to any nf_tables rule, of any family, is a commit; the
  same generation is the same ruleset, so the last dump's rules still hold.
- The legacy backend registers a table in a network namespace before it can hold a rule there, and
  `/proc/net/ip_tables_names` (`ip6_tables_names`) lists the namespace's tables: none (or no file: the module is not
  loaded) means no legacy rule. Legacy tables keep no generation, so where they exist they are dumped each time.

Both are read in this process's own network namespace, the one the dump tools it starts run in (the agent's pod is
host-network). Either answer is None where it cannot be had (no nf_tables, no CAP_NET_ADMIN, an answer not shaped
as the kernel writes it): the check then dumps, as it did without them.
"""

from __future__ import annotations

import socket
import struct

NETLINK_NETFILTER = 12
NFNL_SUBSYS_NFTABLES = 10
NFT_MSG_NEWGEN, NFT_MSG_GETGEN = 15, 16
NFTA_GEN_ID = 1
NLM_F_REQUEST = 1
_HEADER = struct.Struct("=IHHII")  # nlmsghdr: length, type, flags, sequence, port id
_NFGENMSG = struct.Struct("=BBH")  # family (AF_UNSPEC), version (NFNETLINK_V0), resource id (big-endian)
_ATTR = struct.Struct("=HH")  # nlattr: length, type
_SEQUENCE = 1
LEGACY_TABLES = {"iptables-legacy-save": "/proc/net/ip_tables_names",
                 "ip6tables-legacy-save": "/proc/net/ip6_tables_names"}


def nft_generation() -> int | None:
    """The nf_tables ruleset generation of this network namespace, or None where the kernel does not tell it."""
    request = _HEADER.pack(_HEADER.size + _NFGENMSG.size, NFNL_SUBSYS_NFTABLES << 8 | NFT_MSG_GETGEN, NLM_F_REQUEST,
                           _SEQUENCE, 0) + _NFGENMSG.pack(socket.AF_UNSPEC, 0, 0)
    try:
        with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER) as sock:
            sock.setblocking(False)  # nfnetlink answers within send(): nothing to wait for
            sock.send(request)
            answer = sock.recv(4096)
    except OSError:  # no netlink (a sandbox), nothing queued
        return None
    return parse_generation(answer)


def parse_generation(answer: bytes) -> int | None:
    """NFTA_GEN_ID of a NEWGEN answer to our request; None for an error answer or one not shaped so."""
    if len(answer) < _HEADER.size + _NFGENMSG.size:
        return None
    length, kind, _, sequence, _ = _HEADER.unpack_from(answer)
    if kind != NFNL_SUBSYS_NFTABLES << 8 | NFT_MSG_NEWGEN or sequence != _SEQUENCE or not (
            _HEADER.size + _NFGENMSG.size <= length <= len(answer)):
        return None  # NLMSG_ERROR (EPERM without CAP_NET_ADMIN, EOPNOTSUPP without nf_tables) or not ours
    at = _HEADER.size + _NFGENMSG.size
    while at + _ATTR.size <= length:
        size, attribute = _ATTR.unpack_from(answer, at)
        if size < _ATTR.size or at + size > length:
            return None
        if attribute & 0x3FFF == NFTA_GEN_ID:  # (the top two bits are nesting and byte-order flags)
            return int.from_bytes(answer[at + _ATTR.size:at + size], "big") if size == _ATTR.size + 4 else None
        at += (size + 3) & ~3
    return None


def legacy_tables_present(tool: str) -> bool | None:
    """Whether the legacy backend `tool` dumps has a table in this namespace; None when `tool` is no legacy dump
    tool or the list cannot be read (then it is dumped)."""
    path = LEGACY_TABLES.get(tool)
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return bool(f.read(4096).strip())
    except FileNotFoundError:
        return False  # x_tables is not loaded: no table, no rule
    except OSError:
        return None
