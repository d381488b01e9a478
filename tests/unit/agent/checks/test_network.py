"""Interfaces, loopback and IP forwarding from a fixture /sys/class/net and /proc/sys."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

import pytest

from agent.bounds import field_problems
from agent.checks.network import FORWARDING, INTERFACES, Config, NetworkCheck
from agent.host import HostRoot
from agent.model import Status

NOW = dt.datetime(2025, 5, 1, 12, 0, tzinfo=dt.UTC)


class Host:
    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "sys/class/net").mkdir(parents=True)
        (root / "proc/sys/net/ipv4").mkdir(parents=True)
        (root / "proc/sys/net/ipv4/ip_forward").write_text("1\n")
        self.link("lo", "0x9", virtual=True)

    def link(self, name: str, flags: str, *, carrier: bool = True, virtual: bool = False) -> None:
        """An interface as the kernel shows it: `flags` never holds IFF_RUNNING (0x40), whatever the link does;
        `carrier` says whether the link is up, and cannot be read (EINVAL) while the interface is down."""
        where = "devices/virtual/net" if virtual else "devices/pci0000:00/0000:00:03.0/net"
        device = self.root / "sys" / where / name
        device.mkdir(parents=True, exist_ok=True)
        assert not int(flags, 16) & 0x40, "the kernel's flags file never holds IFF_RUNNING"
        (device / "flags").write_text(flags + "\n")
        (device / "carrier").unlink(missing_ok=True)
        if int(flags, 16) & 0x1:
            (device / "carrier").write_text(("1" if carrier else "0") + "\n")
        entry = self.root / "sys/class/net" / name
        if not entry.is_symlink():
            entry.symlink_to(Path("../..") / where / name)


@pytest.fixture
def host(tmp_path: Path) -> Host:
    return Host(tmp_path)


def observe(check: NetworkCheck) -> dict[str, tuple[Status, str]]:
    return {c.type: (c.status, c.reason) for c in asyncio.run(check.observe(NOW)).conditions}


def test_a_healthy_node(host: Host) -> None:
    host.link("eth0", "0x1003")
    host.link("veth1234", "0x1002", virtual=True)  # a pod's veth that is down: not looked at
    host.link("cali0a1b", "0x1002", virtual=True)

    assert observe(NetworkCheck(Config(), HostRoot(host.root))) == {
        INTERFACES: (Status.FALSE, "InterfacesUp"), FORWARDING: (Status.FALSE, "IPForwardingEnabled")}


def test_an_interface_up_without_carrier_is_reported_on_the_second_observation(host: Host) -> None:
    host.link("eth0", "0x1003")
    host.link("eth1", "0x1003", carrier=False)
    check = NetworkCheck(Config(), HostRoot(host.root))

    first, second = observe(check), observe(check)

    assert first[INTERFACES] == (Status.FALSE, "InterfacesUp")
    assert second[INTERFACES] == (Status.TRUE, "InterfaceNotRunning")


def test_a_blip_seen_once_is_not_reported(host: Host) -> None:
    host.link("eth0", "0x1003", carrier=False)
    check = NetworkCheck(Config(), HostRoot(host.root))
    observe(check)
    host.link("eth0", "0x1003")

    assert observe(check)[INTERFACES] == (Status.FALSE, "InterfacesUp")


def test_an_interface_that_was_up_and_went_down_is_reported_but_an_unused_port_is_not(host: Host) -> None:
    host.link("eth0", "0x1003")
    host.link("eno2", "0x1002")  # never up: an unused port
    check = NetworkCheck(Config(), HostRoot(host.root))
    assert observe(check)[INTERFACES] == (Status.FALSE, "InterfacesUp")
    host.link("eth0", "0x1002")

    observe(check)

    assert observe(check)[INTERFACES] == (Status.TRUE, "InterfaceWentDown")


def test_excluded_names_are_not_looked_at(host: Host) -> None:
    host.link("ib0", "0x1003", carrier=False)
    check = NetworkCheck(Config(exclude=("ib*",)), HostRoot(host.root))
    observe(check)

    assert observe(check)[INTERFACES] == (Status.FALSE, "InterfacesUp")


@pytest.mark.parametrize(("lo_flags", "reason"), [(None, "LoopbackMissing"), ("0x8", "LoopbackDown")],
                         ids=["missing", "down"])
def test_the_loopback_interface_must_exist_and_be_up(host: Host, lo_flags: str | None, reason: str) -> None:
    if lo_flags is None:
        (host.root / "sys/class/net/lo").unlink()
    else:
        host.link("lo", lo_flags, virtual=True)
    check = NetworkCheck(Config(), HostRoot(host.root))
    observe(check)

    assert observe(check)[INTERFACES] == (Status.TRUE, reason)


def test_ip_forwarding_off_is_reported_and_can_be_left_unchecked(host: Host) -> None:
    (host.root / "proc/sys/net/ipv4/ip_forward").write_text("0\n")

    assert observe(NetworkCheck(Config(), HostRoot(host.root)))[FORWARDING] == (Status.TRUE, "IPForwardingDisabled")
    assert FORWARDING not in observe(NetworkCheck(Config(require_ip_forward=False), HostRoot(host.root)))


def test_validation_names_the_bad_fields() -> None:
    assert problems(Config(exclude=("",))) == ["exclude[0]: must be an interface name glob such as 'eth*', got ''"]


def test_a_second_interface_failing_while_one_is_reported_does_not_flap_the_condition(host: Host) -> None:
    host.link("eth0", "0x1003")
    host.link("eth1", "0x1003", carrier=False)
    check = NetworkCheck(Config(), HostRoot(host.root))
    observe(check)
    assert observe(check)[INTERFACES] == (Status.TRUE, "InterfaceNotRunning")
    host.link("eth0", "0x1003", carrier=False)

    assert observe(check)[INTERFACES] == (Status.TRUE, "InterfaceNotRunning")


def test_an_unreadable_or_garbled_carrier_is_unknown_not_a_fault(host: Host) -> None:
    host.link("eth0", "0x1003")
    carrier = host.root / "sys/devices/pci0000:00/0000:00:03.0/net/eth0/carrier"
    carrier.write_text("yes\n")
    check = NetworkCheck(Config(), HostRoot(host.root))
    assert observe(check)[INTERFACES] == (Status.UNKNOWN, "BadSensorData")
    carrier.unlink()
    assert observe(check)[INTERFACES] == (Status.UNKNOWN, "BadSensorData")


def test_this_machines_own_interfaces_are_up(tmp_path: Path) -> None:
    """The real /sys of the machine running the tests: its NICs carry traffic (the tests reach PyPI through one)."""
    check = NetworkCheck(Config(), HostRoot(Path("/")))
    observe(check)
    assert observe(check)[INTERFACES] == (Status.FALSE, "InterfacesUp")


def problems(config: object) -> list[str]:
    return [str(problem) for problem in field_problems(config)]
