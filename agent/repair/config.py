"""The `repair:` section of the agent config: which host commands carry out the remediator's asks, and the bounds.

```yaml
repair:
  enabled: true                 # watch this Node for asks and act on them (false: no Node watch, no grant needed)
  hostCommandPrefix: [nsenter, --target, "1", --mount, --uts, --ipc, --net, --pid, --]   # into the host (hostPID)
  commands:
    restart: {kubelet: [systemctl, restart, kubelet], containerd: [...], crio: [...]}   # null: refuse that service
    reboot: [systemctl, reboot]                                                           # null: refuse reboots
  commandTimeout: 2m            # a command still running then has its process group killed (Failed)
  maxRequestAge: 10m            # an ask older than this (by its `requested` time) is Refused
  bootIdPath: /proc/sys/kernel/random/boot_id   # under --host-root; for tests only
```
A command is a list of words run as they are (no shell), after `hostCommandPrefix`. Its program, and the prefix's,
is an absolute path or a bare name looked up on PATH (the host's, through nsenter; the agent's with no prefix); a
relative path would depend on the agent's working directory and is refused.

On by default, in the code as in deploy/agent/default.yaml (the agent run without --config is the shipped
config): the agent acts only on an ask in the `nodemedic.io/repair` annotation, which only the remediator may write
(a ValidatingAdmissionPolicy), and the remediator asks only for a rule that names a repair ladder in the policy.
Turning it off here removes the Node watch and, in the chart, the grant and the host PID namespace it needs.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nodemedic_common.durations import below_floor, parse_duration
from nodemedic_common.inputs import quoted
from nodemedic_common.repair_contract import SERVICES

SOURCE = "repair"  # what the answers go by in the condition book and as the Events' source
HOST_PREFIX = ("nsenter", "--target", "1", "--mount", "--uts", "--ipc", "--net", "--pid", "--")
BOOT_ID_PATH = "/proc/sys/kernel/random/boot_id"
# A restart shorter than this is no restart of a node service (systemd waits for the service to be up); the bound
# keeps a typo ("2" meant as minutes) from failing every restart.
MIN_COMMAND_TIMEOUT = (dt.timedelta(seconds=5), "systemctl waits for the service to start")
# The remediator's clock writes `requested`, the node's judges it, and the ask travels through a watch: a bound
# below a minute would refuse fresh asks on ordinary clock skew.
MIN_REQUEST_AGE = (dt.timedelta(minutes=1), "the remediator's and this node's clocks differ and an ask takes time "
                                            "to arrive")
MAX_WORD = 4096


def _restart_defaults() -> dict[str, tuple[str, ...] | None]:
    return {service: ("systemctl", "restart", service) for service in SERVICES}


@dataclass(frozen=True)
class RepairConfig:
    enabled: bool = True
    host_command_prefix: tuple[str, ...] = HOST_PREFIX
    restart: Mapping[str, tuple[str, ...] | None] = field(default_factory=_restart_defaults)  # service -> command
    reboot: tuple[str, ...] | None = ("systemctl", "reboot")  # None: reboots are refused
    command_timeout: dt.timedelta = dt.timedelta(minutes=2)
    max_request_age: dt.timedelta = dt.timedelta(minutes=10)
    boot_id_path: str = BOOT_ID_PATH  # a host path (under --host-root); configurable for tests only

    def restart_command(self, service: str) -> tuple[str, ...] | None:
        """The whole command line that restarts `service` (prefix included), or None when none is configured."""
        command = self.restart.get(service)
        return None if command is None else self.host_command_prefix + command

    def reboot_command(self) -> tuple[str, ...] | None:
        return None if self.reboot is None else self.host_command_prefix + self.reboot


Problem = Callable[[str, str, int], None]  # (field path below `repair`, message, line)
Reader = Callable[[object, int, Problem], dict[str, Any]]  # (value, its line, problem) -> RepairConfig fields


def parse_repair(raw: object, *, source: str, line: int, errors: list[str]) -> RepairConfig:
    """The `repair:` mapping (None: every default); each mistake is appended to `errors` as
    `FILE:LINE: repair.FIELD: message`, and the defaults stand in for the fields in error."""
    if raw is None:
        return RepairConfig()
    if not isinstance(raw, dict):
        errors.append(f"{source}:{line}: repair: must be a mapping")
        return RepairConfig()

    def problem(path: str, message: str, at: int) -> None:
        errors.append(f"{source}:{at}: repair.{path}: {message}")

    lines: dict[str, int] = raw.get("__lines__", {})
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if key == "__lines__":
            continue
        read = _READERS.get(key)
        if read is None:
            problem(str(key), f"unknown field; valid: {', '.join(sorted(_READERS))}", lines.get(key, line))
        else:
            values.update(read(value, lines.get(key, line), problem))
    return RepairConfig(**values)


def _enabled(value: object, at: int, problem: Problem) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"enabled": value}
    problem("enabled", f"must be true or false, not {quoted(value)}", at)
    return {}


def _prefix(value: object, at: int, problem: Problem) -> dict[str, Any]:
    prefix = _words(value, allow_empty=True)
    if isinstance(prefix, str):
        problem("hostCommandPrefix", prefix, at)
        return {}
    return {"host_command_prefix": prefix}


def _boot_id_path(value: object, at: int, problem: Problem) -> dict[str, Any]:
    if isinstance(value, str) and value.startswith("/") and "\0" not in value:
        return {"boot_id_path": value}
    problem("bootIdPath", f"must be an absolute path on the host, not {quoted(value)}", at)
    return {}


def _duration(key: str, name: str, floor: tuple[dt.timedelta, str]) -> Reader:
    def read(value: object, at: int, problem: Problem) -> dict[str, Any]:
        try:
            duration = parse_duration(value)
            if message := below_floor(duration, *floor):
                raise ValueError(message)
        except ValueError as e:
            problem(key, str(e), at)
            return {}
        return {name: duration}
    return read


def _commands(raw: object, line: int, problem: Problem) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        problem("commands", "must be a mapping with restart and reboot", line)
        return {}
    lines: dict[str, int] = raw.get("__lines__", {})
    out: dict[str, Any] = {}
    for key, value in raw.items():
        at = lines.get(key, line)
        if key == "__lines__":
            continue
        if key == "reboot":
            command = None if value is None else _words(value, allow_empty=False)
            if isinstance(command, str):
                problem("commands.reboot", command, at)
            else:
                out["reboot"] = command
        elif key == "restart":
            restart = _restart(value, at, problem)
            if restart is not None:
                out["restart"] = restart
        else:
            problem(f"commands.{key}", "unknown field; valid: reboot, restart", at)
    return out


def _restart(raw: object, line: int, problem: Problem) -> dict[str, tuple[str, ...] | None] | None:
    """The given services' commands over the defaults (`null` for one: its restarts are refused)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        problem("commands.restart", f"must be a mapping of service ({', '.join(SERVICES)}) to command", line)
        return None
    lines: dict[str, int] = raw.get("__lines__", {})
    out = _restart_defaults()
    for service, value in raw.items():
        if service == "__lines__":
            continue
        at = lines.get(service, line)
        if service not in SERVICES:
            problem(f"commands.restart.{service}", f"unknown service; valid: {', '.join(SERVICES)}", at)
            continue
        command = None if value is None else _words(value, allow_empty=False)
        if isinstance(command, str):
            problem(f"commands.restart.{service}", command, at)
        else:
            out[service] = command
    return out


def _words(value: object, *, allow_empty: bool) -> tuple[str, ...] | str:
    """A command line as a tuple of words, or what is wrong with it."""
    if not isinstance(value, list):
        return f"must be a list of words (no shell), e.g. [systemctl, restart, kubelet], not {quoted(value)}"
    if not value and not allow_empty:
        return "must name a command: give at least the program (null refuses these asks instead)"
    words = [str(w) if isinstance(w, int) and not isinstance(w, bool) else w for w in value]  # `--target, 1`
    for i, word in enumerate(words):
        if not isinstance(word, str) or not word or "\0" in word or len(word) > MAX_WORD:
            return f"[{i}]: must be a non-empty string without NUL of at most {MAX_WORD} characters, not {quoted(word)}"
    if words and "/" in words[0] and not words[0].startswith("/"):
        return (f"[0]: {quoted(words[0])} is a relative path, which depends on the agent's working directory: give "
                "an absolute path or a bare program name looked up on PATH")
    return tuple(words)


_READERS: dict[str, Reader] = {
    "enabled": _enabled,
    "hostCommandPrefix": _prefix,
    "commands": _commands,
    "commandTimeout": _duration("commandTimeout", "command_timeout", MIN_COMMAND_TIMEOUT),
    "maxRequestAge": _duration("maxRequestAge", "max_request_age", MIN_REQUEST_AGE),
    "bootIdPath": _boot_id_path,
}
