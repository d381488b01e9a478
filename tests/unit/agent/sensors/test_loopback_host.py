"""Server names that reach the node itself, read as the C library reads them, and the ones that do not."""

from __future__ import annotations

import ipaddress
import socket

import pytest

from agent.sensors.loopback_host import inet_aton, reaches_this_node

THIS_NODE = [
    # IPv4 in every spelling inet_aton accepts: dotted quad, short forms, octal, hexadecimal, one integer
    "127.0.0.1", "127.0.0.53", "127.255.255.255", "127.127.1.0", "127.1", "127.0.1", "0x7f.1", "0X7F.0X0.0X0.0X1",
    "0x7f.0.0.1", "0177.0.0.1", "0177.1", "0x00007f.1", "2130706433", "0x7f000001", "017700000001", "127.65535",
    "127.16777215", "0", "0.0", "0.0.0.0", "0x0",
    # IPv6: loopback, unspecified, IPv4-mapped and IPv4-compatible loopback, in any case, with a zone
    "::1", "0:0:0:0:0:0:0:1", "::", "::ffff:127.0.0.1", "::FFFF:7F00:1", "0:0:0:0:0:ffff:7f00:1", "::ffff:127.1.2.3",
    "::127.0.0.1", "::7f00:1", "::1%lo", "::ffff:0.0.0.0",
    # names: localhost and under it, with the root's dot, in any case, and the distributions' /etc/hosts aliases
    "localhost", "localhost.", "LOCALHOST", "LocalHost.", "ntp.localhost", "ntp.localhost.", "a.b.LOCALHOST",
    "localhost.localdomain", "localhost4", "localhost6.localdomain6", "ip6-localhost", "ip6-loopback",
]
ELSEWHERE = [
    "128.0.0.1", "126.255.255.255", "0x80.1", "0x80000001", "2130706431", "2147483648", "0200.0.0.1", "10.0.0.1",
    "169.254.169.123", "1.0.0.127", "0.0.0.1", "0.1",
    "2001:db8::1", "::2", "::ffff:128.0.0.1", "::ffff:10.0.0.1", "fe80::1%eth0", "64:ff9b::7f00:1",
    "ntp.example.org", "time.google.com", "localhost-ntp.internal", "mylocalhost", "localhost.example.org",
    "ntp.localhost.example.org", "ntp-localhost",
    # not addresses to inet_aton, so names the resolver would ask DNS about
    "127.0.0.1.", "08.1", "0x", "127..1", "127.0.0.0.1", "0x100.1", "256.0.0.1", "127.0x1000000", "4294967296",
]


@pytest.mark.parametrize("host", THIS_NODE)
def test_every_spelling_of_the_node_itself_is_recognised(host: str) -> None:
    assert reaches_this_node(host)


@pytest.mark.parametrize("host", ELSEWHERE)
def test_other_hosts_and_look_alikes_are_kept(host: str) -> None:
    assert not reaches_this_node(host)


@pytest.mark.parametrize("text", [
    "127.0.0.1", "127.1", "0x7f.1", "0177.0.0.1", "2130706433", "0", "1.2.3", "255.255.255.255", "0xff.0xffffff",
    "4294967295", "0377.0377.0377.0377", "010.010.010.010", "08.1", "0x", "1.2.3.4.5", "256.1", "1.16777216",
    "4294967296", "1..2", "", ".", "1.", "abc", "0xg", "1e3", "-1", "+1", " 1", "٣",
])
def test_ipv4_is_read_exactly_as_the_c_library_s_inet_aton_reads_it(text: str) -> None:
    try:
        expected: ipaddress.IPv4Address | None = ipaddress.IPv4Address(socket.inet_aton(text))
    except OSError:
        expected = None
    assert inet_aton(text) == expected
