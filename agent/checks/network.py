"""Host networking basics: `NetworkInterfaceDown` and `IPForwardingDisabled`.

`NetworkInterfaceDown`, from `/sys/class/net/<if>/flags` (IFF_UP 0x1) and `/sys/class/net/<if>/carrier`:
- the loopback interface missing or not up (`LoopbackMissing`, `LoopbackDown`): nothing local works without it;
- a physical interface that is up but has no carrier (`carrier` reads 0: `InterfaceNotRunning`), or that was up
  earlier in this agent's life and is down now (`InterfaceWentDown`). An interface that was never up is an unused
  port, not a fault. The `flags` file is the device's own flags, which never hold IFF_RUNNING (the kernel adds that
  bit only to SIOCGIFFLAGS answers, from the carrier): judged by `flags`, every running NIC looked cable-less, as
  the first agent on a real node showed.
Virtual interfaces (their sysfs entry lives under `/sys/devices/virtual/`: veth, bridges, tunnels, CNI devices)
come and go with pods and are not looked at, nor names matching an `exclude` glob. A finding must hold on two
observations in a row, so a link renegotiating during one poll is not reported.

`IPForwardingDisabled`: `/proc/sys/net/ipv4/ip_forward` is not 1, so pod traffic is not routed off the node.
The agent runs on the host network, so these files are the host's.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import os
from dataclasses import dataclass, field

from agent.bounds import Bounds, bounded, text_form
from agent.host import HostRoot
from agent.model import CheckTiming, ConditionReport, Observation, Status

INTERFACES = "NetworkInterfaceDown"
FORWARDING = "IPForwardingDisabled"
IFF_UP = 0x1


_INTERFACE_GLOB = text_form("an interface name glob such as 'eth*'", lambda glob: bool(glob) and "/" not in glob)


@dataclass(frozen=True)
class Config:
    timing: CheckTiming = field(default_factory=CheckTiming)
    # globs; IPoIB ports are often down by design
    exclude: tuple[str, ...] = bounded(("ib*",), Bounds(form=_INTERFACE_GLOB))
    require_ip_forward: bool = True


class NetworkCheck:
    name = "network"

    def __init__(self, config: Config, host: HostRoot) -> None:
        self.timing = config.timing
        self.condition_types: tuple[str, ...] = (INTERFACES, FORWARDING) if config.require_ip_forward else (
            INTERFACES,)
        self._config = config
        self._host = host
        self._was_up: set[str] = set()
        self._pending: tuple[str, str] | None = None  # the last observation's finding: (reason, message)

    async def observe(self, now: dt.datetime) -> Observation:
        reports = [self._interfaces()]
        if self._config.require_ip_forward:
            reports.append(self._forwarding())
        return Observation(self.name, now, conditions=tuple(reports))

    def _flags(self, name: str) -> int:
        text = self._host.read_sensor(f"/sys/class/net/{name}/flags").strip()
        try:
            return int(text, 16)
        except ValueError:
            raise ValueError(f"/sys/class/net/{name}/flags: {text[:20]!r} is not a hex number") from None

    def _carrier(self, name: str) -> bool:
        """Whether an interface that is up has a carrier (the kernel refuses the read, EINVAL, while it is down)."""
        text = self._host.read_sensor(f"/sys/class/net/{name}/carrier").strip()
        if text not in ("0", "1"):
            raise ValueError(f"/sys/class/net/{name}/carrier: {text[:20]!r} is neither 0 nor 1")
        return text == "1"

    def _interfaces(self) -> ConditionReport:
        try:
            finding, checked = self._find_problem()
        except (OSError, ValueError) as e:
            return ConditionReport(INTERFACES, Status.UNKNOWN, "BadSensorData", str(e))
        healthy = ConditionReport(INTERFACES, Status.FALSE, "InterfacesUp",
                                  f"loopback up; physical interfaces checked: {', '.join(checked) or 'none'}")
        seen_before, self._pending = self._pending, finding
        if finding is None or seen_before is None:  # healthy, or a problem seen once: wait for a second look
            return healthy
        return ConditionReport(INTERFACES, Status.TRUE, *finding)

    def _find_problem(self) -> tuple[tuple[str, str] | None, list[str]]:
        root = self._host.path("/sys/class/net")
        names = sorted(p.name for p in root.iterdir())
        if "lo" not in names:
            return ("LoopbackMissing", "no loopback interface (lo)"), []
        if not self._flags("lo") & IFF_UP:
            return ("LoopbackDown", "the loopback interface (lo) is down"), []
        checked, problems, reason = [], [], ""
        for name in names:
            if name == "lo" or any(fnmatch.fnmatchcase(name, p) for p in self._config.exclude):
                continue
            link = root / name
            if not link.is_symlink() or "/devices/virtual/" in os.readlink(link):
                continue  # virtual: veth, bridges, tunnels come and go with pods
            flags = self._flags(name)
            checked.append(name)
            if flags & IFF_UP:
                self._was_up.add(name)
                if not self._carrier(name):
                    problems.append(f"{name} is up but has no carrier")
                    reason = reason or "InterfaceNotRunning"
            elif name in self._was_up:
                problems.append(f"{name} went down")
                reason = reason or "InterfaceWentDown"
        return ((reason, "; ".join(problems)) if problems else None), checked

    def _forwarding(self) -> ConditionReport:
        try:
            value = self._host.read_sensor("/proc/sys/net/ipv4/ip_forward").strip()
        except ValueError as e:
            return ConditionReport(FORWARDING, Status.UNKNOWN, "BadSensorData", str(e))
        if value == "1":
            return ConditionReport(FORWARDING, Status.FALSE, "IPForwardingEnabled", "net.ipv4.ip_forward = 1")
        return ConditionReport(FORWARDING, Status.TRUE, "IPForwardingDisabled",
                               f"net.ipv4.ip_forward = {value}: pod traffic is not routed off this node")
