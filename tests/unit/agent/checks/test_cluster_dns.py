"""The cluster DNS check: where it finds the servers (the kubelet's flags or config file, in a fixture /proc), the
wire format of its query and the answers' verdicts, and the debounce against a UDP responder on 127.0.0.1 (the e2e
test on the real node asks a real CoreDNS)."""

from __future__ import annotations

import asyncio
import datetime as dt
import socket
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.bounds import field_problems
from agent.checks.cluster_dns import UNREACHABLE, ClusterDNSCheck, Config, kubelet_dns, query, verdict
from agent.host import HostRoot
from agent.model import Observation, Status

NOW = dt.datetime(2026, 5, 1, tzinfo=dt.UTC)


def kubelet(root: Path, *argv: str, config: str | None = None) -> HostRoot:
    pid = root / "proc" / "321"
    pid.mkdir(parents=True)
    (pid / "comm").write_text("kubelet\n")
    (pid / "cmdline").write_bytes(b"\0".join(a.encode() for a in ("/usr/bin/kubelet", *argv)) + b"\0")
    if config is not None:
        (root / "var/lib/kubelet").mkdir(parents=True)
        (root / "var/lib/kubelet/config.yaml").write_text(config)
    return HostRoot(root)


def test_the_servers_and_domain_come_from_the_kubelets_config_file(tmp_path: Path) -> None:
    host = kubelet(tmp_path, "--config=/var/lib/kubelet/config.yaml", "--v=2",
                   config="kind: KubeletConfiguration\nclusterDNS: [10.96.0.10]\nclusterDomain: corp.local\n")
    found = kubelet_dns(host)
    assert found is not None and (found.servers, found.domain) == (("10.96.0.10",), "corp.local")


def test_the_kubelets_flags_win_over_its_file_and_a_kubelet_without_cluster_dns_gives_nothing(tmp_path: Path) -> None:
    host = kubelet(tmp_path / "a", "--config", "/var/lib/kubelet/config.yaml", "--cluster-dns=10.0.0.10,bogus",
                   config="clusterDNS: [10.96.0.10]\n")
    found = kubelet_dns(host)
    assert found is not None and found.servers == ("10.0.0.10",)
    assert kubelet_dns(kubelet(tmp_path / "b", "--config=/var/lib/kubelet/config.yaml", config="{}")) is None
    assert kubelet_dns(HostRoot(tmp_path / "no-proc")) is None


def test_the_query_is_one_recursive_a_question() -> None:
    ident, wire = query("kubernetes.default.svc.cluster.local")
    assert struct.unpack("!HHHHHH", wire[:12]) == (ident, 0x0100, 1, 0, 0, 0)
    assert wire[12:] == b"\x0akubernetes\x07default\x03svc\x07cluster\x05local\x00\x00\x01\x00\x01"


@pytest.mark.parametrize(("flags", "answers", "expected"), [
    (0x8180, 1, None),
    (0x8183, 0, "answered NXDOMAIN"),
    (0x8182, 0, "answered SERVFAIL"),
    (0x8180, 0, "answered with no address"),
    (0x0100, 1, "an answer to another query"),
], ids=["noerror", "nxdomain", "servfail", "empty", "not-a-response"])
def test_verdicts(flags: int, answers: int, expected: str | None) -> None:
    assert verdict(7, struct.pack("!HHHHHH", 7, flags, 1, answers, 0, 0)) == expected
    assert verdict(7, b"\x00\x07") == "a 2-byte answer is no DNS message"


class Responder:
    """A UDP socket on 127.0.0.1 that answers each query with `flags` (None: stays silent)."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.flags: int | None = 0x8180
        self.stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        self.sock.settimeout(0.05)
        while not self.stop:
            try:
                data, peer = self.sock.recvfrom(512)
            except TimeoutError:
                continue
            if self.flags is not None:
                self.sock.sendto(data[:2] + struct.pack("!HHHHH", self.flags, 1, 1, 0, 0) + data[12:], peer)


@pytest.fixture
def responder() -> Iterator[Responder]:
    r = Responder()
    yield r
    r.stop = True
    r.thread.join(timeout=5)
    r.sock.close()


def test_three_failed_lookups_in_a_row_turn_true_and_one_answer_turns_false(responder: Responder) -> None:
    port = responder.sock.getsockname()[1]

    async def run() -> list[tuple[Status, str, str]]:
        check = ClusterDNSCheck(Config(servers=("127.0.0.1",), port=port,
                                       request_timeout=dt.timedelta(milliseconds=200)), HostRoot(Path("/nonexistent")))
        seen = []
        for flags in (0x8180, 0x8183, None, 0x8182, 0x8180):
            responder.flags = flags
            (c,) = (await check.observe(NOW)).conditions
            seen.append((c.status, c.reason, c.message))
        return seen

    name = "kubernetes.default.svc.cluster.local"
    assert asyncio.run(run()) == [
        (Status.FALSE, "ClusterDNSIsHealthy", f"127.0.0.1 answer for {name}"),
        (Status.FALSE, "ClusterDNSIsHealthy",
         f"DNS A {name}: 127.0.0.1: answered NXDOMAIN (1 failure(s) in a row, threshold 3)"),
        (Status.FALSE, "ClusterDNSIsHealthy",
         f"DNS A {name}: 127.0.0.1: no answer within 200ms (2 failure(s) in a row, threshold 3)"),
        (Status.TRUE, UNREACHABLE, f"DNS A {name}: 127.0.0.1: answered SERVFAIL (3 or more failures in a row)"),
        (Status.FALSE, "ClusterDNSIsHealthy", f"127.0.0.1 answer for {name}"),
    ]


def test_a_node_whose_kubelet_names_no_cluster_dns_reports_nothing(tmp_path: Path) -> None:
    check = ClusterDNSCheck(Config(), kubelet(tmp_path, "--v=2"))
    assert asyncio.run(check.observe(NOW)) == Observation("clusterDNS", NOW)
    assert check.timing.interval == dt.timedelta(minutes=5)


def test_validate_names_the_field() -> None:
    assert problems(Config(servers=("dns.local",), name="kubernetes.default.svc.", failure_threshold=0)) == [
        "servers[0]: 'dns.local' is not an IP address",
        "name: must be a relative DNS name, e.g. kubernetes.default.svc, got 'kubernetes.default.svc.'",
        "failureThreshold: must be at least 1, got 0"]


def problems(config: object) -> list[str]:
    return [str(problem) for problem in field_problems(config)]
