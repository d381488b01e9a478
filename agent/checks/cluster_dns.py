"""Cluster DNS answering from the node: `ClusterDNSUnreachable`.

Every `interval`, one DNS query (UDP, type A, recursion desired) for `kubernetes.default.svc.<cluster domain>` to each
cluster DNS server, sent from the node's own network namespace (the agent runs in the host network), so it takes the
path a pod's lookup takes through this node: kube-proxy's rules for the DNS Service's address, the network to the DNS
pods, the DNS server and its view of the API. An answer is NOERROR for that name; a timeout, a refusal, NXDOMAIN or
SERVFAIL is a failed probe, and `failure_threshold` in a row turn the condition True (`agent/verdicts/debounce.py`).

Where the servers and the domain come from (unless `servers` / `clusterDomain` say): the kubelet's own configuration,
as the pods get it: `clusterDNS` and `clusterDomain` in the file the running kubelet's `--config` names (its command
line in the host's /proc), or its `--cluster-dns` / `--cluster-domain` flags. A node whose kubelet names no cluster
DNS reports nothing and looks again every `absent_every`. The query is a few dozen bytes, written here: no resolver
library, and never the host's resolv.conf (which need not point at the cluster DNS).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import ipaddress
import secrets
import socket
import struct
from dataclasses import dataclass, field

import yaml

from agent.bounds import AT_LEAST_ONE, PORT, ZERO, Bounds, bounded, text_form
from agent.host import HostRoot
from agent.model import CheckTiming, Observation
from agent.verdicts.debounce import FailureDebounce
from nodemedic_common.durations import format_duration
from nodemedic_common.inputs import quoted

UNREACHABLE = "ClusterDNSUnreachable"
_RCODES = {1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP", 5: "REFUSED"}


def _ip_address(text: str) -> str | None:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return f"{quoted(text)} is not an IP address"
    return None


_RELATIVE_NAME = text_form("a relative DNS name, e.g. kubernetes.default.svc",
                           lambda name: bool(name) and not name.endswith(".") and " " not in name)


@dataclass(frozen=True)
class Config:
    timing: CheckTiming = field(default_factory=CheckTiming)
    servers: tuple[str, ...] = bounded((), Bounds(form=_ip_address))  # empty: the kubelet's clusterDNS
    cluster_domain: str = ""  # empty: the kubelet's clusterDomain, else cluster.local
    name: str = bounded("kubernetes.default.svc", Bounds(form=_RELATIVE_NAME))  # looked up below the cluster domain
    port: int = bounded(53, PORT)
    request_timeout: dt.timedelta = bounded(dt.timedelta(seconds=2), Bounds(above=ZERO, shorter_than="timing.timeout"))
    failure_threshold: int = bounded(3, AT_LEAST_ONE)
    absent_every: dt.timedelta = bounded(dt.timedelta(minutes=5), Bounds(not_shorter_than="timing.interval"))


@dataclass(frozen=True)
class ClusterDNS:
    servers: tuple[str, ...]
    domain: str


def kubelet_dns(host: HostRoot) -> ClusterDNS | None:
    """The running kubelet's cluster DNS servers and domain, from its flags or its --config file."""
    argv = _kubelet_argv(host)
    if argv is None:
        return None
    flags = _flags(argv)
    servers = tuple(s for s in flags.get("cluster-dns", "").split(",") if s)
    domain = flags.get("cluster-domain", "")
    if "config" in flags:
        try:
            doc = yaml.safe_load(host.resolve(flags["config"]).read_text())
        except (OSError, yaml.YAMLError, UnicodeDecodeError):
            doc = None
        if isinstance(doc, dict):
            listed = doc.get("clusterDNS")
            if isinstance(listed, list) and not servers:
                servers = tuple(str(s) for s in listed)
            if isinstance(doc.get("clusterDomain"), str) and not domain:
                domain = doc["clusterDomain"]
    servers = tuple(s for s in servers if _is_ip(s))
    return ClusterDNS(servers, domain) if servers else None


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _kubelet_argv(host: HostRoot) -> list[str] | None:
    proc = host.path("/proc")
    try:
        entries = [e for e in proc.iterdir() if e.name.isdigit()]
    except OSError:
        return None
    for entry in entries:
        try:
            if (entry / "comm").read_text().strip() == "kubelet":
                return (entry / "cmdline").read_bytes().decode("utf-8", "replace").split("\0")
        except OSError:
            continue
    return None


def _flags(argv: list[str]) -> dict[str, str]:
    flags: dict[str, str] = {}
    for i, arg in enumerate(argv):
        if arg.startswith("--"):
            key, eq, value = arg[2:].partition("=")
            flags[key] = value if eq else (argv[i + 1] if i + 1 < len(argv) else "")
    return flags


def query(name: str) -> tuple[int, bytes]:
    """(id, wire bytes) of one recursive A query for `name`."""
    ident = secrets.randbelow(1 << 16)
    labels = b"".join(bytes([len(p)]) + p.encode("ascii") for p in name.strip(".").split("."))
    return ident, struct.pack("!HHHHHH", ident, 0x0100, 1, 0, 0, 0) + labels + b"\0" + struct.pack("!HH", 1, 1)


def verdict(ident: int, answer: bytes) -> str | None:
    """None for a NOERROR answer to query `ident`, else what is wrong with it."""
    if len(answer) < 12:
        return f"a {len(answer)}-byte answer is no DNS message"
    got, flags, _, count = struct.unpack("!HHHH", answer[:8])
    if got != ident or not flags & 0x8000:
        return "an answer to another query"
    rcode = flags & 0xF
    if rcode:
        return f"answered {_RCODES.get(rcode, f'rcode {rcode}')}"
    return None if count else "answered with no address"


async def ask(server: str, port: int, name: str, timeout: dt.timedelta) -> str | None:
    """None when `server` answers for `name` within `timeout`, else what went wrong (stable words)."""
    family = socket.AF_INET6 if ipaddress.ip_address(server).version == 6 else socket.AF_INET
    ident, message = query(name)
    loop = asyncio.get_running_loop()
    with socket.socket(family, socket.SOCK_DGRAM) as sock:
        sock.setblocking(False)
        try:
            await loop.sock_connect(sock, (server, port))
            await loop.sock_sendall(sock, message)
            async with asyncio.timeout(timeout.total_seconds()):
                while (problem := verdict(ident, await loop.sock_recv(sock, 4096))) == "an answer to another query":
                    continue
        except TimeoutError:
            return f"no answer within {format_duration(timeout)}"
        except OSError as exc:
            return exc.strerror or str(exc)
    return problem


class ClusterDNSCheck:
    name = "clusterDNS"
    condition_types = (UNREACHABLE,)

    def __init__(self, config: Config, host: HostRoot) -> None:
        self._config = config
        self._host = host
        self._dns: ClusterDNS | None = None
        self._next_look: dt.datetime | None = None
        self._debounce = FailureDebounce("ClusterDNS", UNREACHABLE, config.failure_threshold)

    @property
    def timing(self) -> CheckTiming:
        if self._dns is not None:
            return self._config.timing
        return CheckTiming(interval=self._config.absent_every, timeout=self._config.timing.timeout)

    async def observe(self, now: dt.datetime) -> Observation:
        if self._dns is None:
            if self._next_look is not None and now < self._next_look:
                return Observation(self.name, now)
            self._dns = self._find()
            if self._dns is None:
                self._next_look = now + self._config.absent_every
                return Observation(self.name, now)
        dns = self._dns
        name = f"{self._config.name}.{dns.domain or 'cluster.local'}"
        timeout, port = self._config.request_timeout, self._config.port
        failures = [f"{server}: {problem}" for server in dns.servers
                    if (problem := await ask(server, port, name, timeout)) is not None]
        servers = ", ".join(dns.servers)
        # one failing server of several is a failure: a pod's resolver tries them in order and waits on the dead one
        failure = "; ".join(failures) if failures else None
        return Observation(self.name, now, conditions=(self._debounce.report(
            failure, ok=f"{servers} answer for {name}", target=f"DNS A {name}"),))

    def _find(self) -> ClusterDNS | None:
        if self._config.servers:
            return ClusterDNS(self._config.servers, self._config.cluster_domain)
        found = kubelet_dns(self._host)
        if found is None:
            return None
        return ClusterDNS(found.servers, self._config.cluster_domain or found.domain)
