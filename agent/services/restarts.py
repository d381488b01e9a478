"""How often a host service restarted: shared by the kubelet and container-runtime checks.

Two sources, chosen per check with `RestartConfig.source`:

- `proc` (default): find the service's process by scanning `<root>/proc/*/comm` for its name and read its start
  time from its `stat` (field 22, clock ticks after `btime` in `<root>/proc/stat`). Once found, each sample
  re-reads only that pid's `stat`; the full scan runs again only when the process is gone or its start time
  changed. A new start time is one restart, dated exactly when it happened. Works through the host root (a pod
  needs only the host's /proc mounted), and sees every kind of restart (crash, `systemctl restart`, OOM kill). It
  only sees restarts while the agent runs, and two restarts within one check interval count as one. A service
  never seen yet (a host without it) is looked for again at the idle pace (`agent/sensors/idle.py`), not every
  sample: until then the sample says what the last scan found. Once seen, a service that is gone is looked for on
  every sample.
- `systemd`: `systemctl show -p LoadState,NRestarts <units>` through an injectable command runner. `NRestarts`
  never misses a restart between samples, but it counts only restarts systemd made itself (`Restart=`), not
  `systemctl restart`, and from a container it needs the host's systemd bus. Increases are dated at the sample.

Either way the first reading is a baseline: restarts from before the agent started are not counted, because
their times are not known. The condition is True when at least `max_restarts` restarts fall within `window`
(node-problem-detector's FrequentKubeletRestart: 5 in 20 minutes).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import os
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from agent.bounds import AT_LEAST_ONE, POSITIVE, Bounds, bounded, text_form
from agent.host import HostRoot
from agent.model import ConditionReport, Status
from agent.sensors.idle import IDLE_INTERVAL
from nodemedic_common.durations import format_duration

SOURCES = ("proc", "systemd")
# The samples run on a grid (agent/supervisor.py) and each dates itself a little after its tick: the look due at a
# tick must not slip to the next one because this tick's sample started a few milliseconds earlier than the last.
_GRID_SLACK = dt.timedelta(seconds=1)

CommandRunner = Callable[[Sequence[str]], Awaitable[str]]  # argv -> stdout; raises OSError or CommandError


class CommandError(Exception):
    """A command ran but failed (non-zero exit)."""


_PLAIN_NAME = text_form("a plain name", lambda name: bool(name) and "/" not in name and name.strip() == name)


@dataclass(frozen=True)
class RestartConfig:
    source: str = bounded("proc", Bounds(choices=SOURCES))
    # empty = the check's own defaults, so a config file may set `restarts: {maxRestarts: 3}` alone
    process_names: tuple[str, ...] = bounded((), Bounds(form=_PLAIN_NAME))  # `comm` names for `proc`, e.g. ("kubelet",)
    units: tuple[str, ...] = bounded((), Bounds(form=_PLAIN_NAME))  # systemd units for `systemd`, e.g. ("kubelet",)
    max_restarts: int = bounded(5, AT_LEAST_ONE)  # this many restarts within `window` -> True
    window: dt.timedelta = bounded(dt.timedelta(minutes=20), POSITIVE)


async def run_command(argv: Sequence[str]) -> str:
    """Run `argv` without a shell; the supervisor's timeout cancels us, so kill the child on cancellation."""
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    try:
        out, err = await proc.communicate()
    except asyncio.CancelledError:
        if proc.returncode is None:
            proc.kill()
        raise
    if proc.returncode != 0:
        detail = err.decode(errors="replace").strip()[:200]
        raise CommandError(f"{argv[0]} exited with {proc.returncode}: {detail}")
    return out.decode(errors="replace")


class SensorError(Exception):
    """The host data could not be read or made no sense; the condition becomes Unknown with this message."""


@dataclass(frozen=True)
class _Process:
    pid: int
    ppid: int
    started: dt.datetime


def _read(path: str) -> str:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(fd, 4096).decode(errors="replace")  # a /proc/<pid> file is generated whole on one read
    finally:
        os.close(fd)


class RestartMonitor:
    """Counts restarts of one service across observations and reports `condition_type`."""

    def __init__(self, config: RestartConfig, host: HostRoot, *, defaults: RestartConfig, condition_type: str,
                 subject: str, run: CommandRunner = run_command, clock_ticks: int | None = None) -> None:
        self._config = dataclasses.replace(config, process_names=config.process_names or defaults.process_names,
                                           units=config.units or defaults.units)
        self._host = host
        self._type = condition_type
        self._subject = subject  # "kubelet", "container runtime": used in messages
        self._run = run
        self._ticks = clock_ticks or os.sysconf("SC_CLK_TCK")  # the host's kernel is ours, so its USER_HZ too
        self._restarts: deque[dt.datetime] = deque()
        self._last_start: dt.datetime | None = None  # proc: start time of the process seen last
        self._last_pid: int | None = None  # proc: avoids a full /proc scan while the process lives
        self._last_count: int | None = None  # systemd: NRestarts seen last
        self._btime: float | None = None  # proc: the host's boot time, seconds since the epoch
        self._absent: tuple[dt.datetime, str] | None = None  # proc, never seen: next scan, what the last said

    async def observe(self, now: dt.datetime) -> ConditionReport:
        try:
            if self._config.source == "systemd":
                note = await self._sample_systemd(now)
            else:
                note = self._sample_proc(now)
        except (OSError, CommandError, SensorError, ValueError) as exc:
            return ConditionReport(self._type, Status.UNKNOWN, "RestartsUnknown",
                                   f"cannot count {self._subject} restarts: {exc}")
        while self._restarts and self._restarts[0] < now - self._config.window:
            self._restarts.popleft()
        count = len(self._restarts)
        cfg = self._config
        message = f"{self._subject} restarted {count} time(s) in the last {format_duration(cfg.window)}"
        message += f" (limit {cfg.max_restarts}){note}"
        if count >= cfg.max_restarts:
            return ConditionReport(self._type, Status.TRUE, self._type, message)
        return ConditionReport(self._type, Status.FALSE, f"No{self._type}", message)

    async def _sample_systemd(self, now: dt.datetime) -> str:
        argv = ["systemctl", "show", "--property=LoadState,NRestarts", "--", *self._config.units]
        total, loaded = 0, 0
        for block in (await self._run(argv)).strip().split("\n\n"):
            props = {key: value for key, _, value in (line.partition("=") for line in block.splitlines())}
            if props.get("LoadState") == "loaded":
                loaded += 1
                restarts = props.get("NRestarts", "")
                if not restarts.isdigit():  # systemd older than 235 has no NRestarts
                    raise SensorError(f"systemctl gave no NRestarts number (got {restarts!r})")
                total += int(restarts)
        if not loaded:
            raise SensorError(f"none of the units {', '.join(self._config.units)} is loaded")
        if self._last_count is not None and total > self._last_count:
            self._restarts.extend([now] * (total - self._last_count))
        # a smaller count means the counter was reset (unit reloaded): take it as the new baseline
        self._last_count = total
        return ""

    def _sample_proc(self, now: dt.datetime) -> str:
        if self._absent is not None and now < self._absent[0]:
            raise SensorError(self._absent[1])
        found = self._find_process()
        if found is None:
            if self._last_start is None:
                names = ", ".join(self._config.process_names)
                absent = f"no process named {names} under {self._host.path('/proc')}"
                self._absent = (now + IDLE_INTERVAL - _GRID_SLACK, absent)
                raise SensorError(absent)
            return f"; {self._subject} is not running now"
        self._absent = None
        if self._last_start is not None and found.started > self._last_start:
            self._restarts.append(found.started)
        # an older start time means another process of that name was picked: a new baseline, not a restart
        self._last_start, self._last_pid = found.started, found.pid
        return ""

    def _find_process(self) -> _Process | None:
        btime = self._boot_time()
        names = set(self._config.process_names)
        proc = str(self._host.path("/proc"))
        if self._last_pid is not None:  # the common case: one file read re-verifies the process seen last
            cached = self._read_process(proc, self._last_pid, names, btime)
            if cached is not None and cached.started == self._last_start:
                return cached
        found = []
        with os.scandir(proc) as entries:  # OSError here -> Unknown
            for entry in entries:
                if entry.name.isdigit():
                    process = self._read_process(proc, int(entry.name), names, btime)
                    if process is not None:
                        found.append(process)
        if not found:
            return None
        # a service started by systemd has ppid 1; nested runtimes (kind, docker-in-docker) do not
        top = [p for p in found if p.ppid == 1] or found
        return min(top, key=lambda p: p.started)

    def _read_process(self, proc: str, pid: int, names: set[str], btime: float) -> _Process | None:
        """The process `pid` if its name is one of `names`. Plain string paths and os-level reads: a scan costs
        one small `comm` read per process (the kernel makes `comm` at half the cost of `stat`); only a match reads
        its `stat`."""
        try:
            if _read(f"{proc}/{pid}/comm").strip() not in names:
                return None
            stat = _read(f"{proc}/{pid}/stat")
        except OSError:  # processes come and go while we scan
            return None
        # the command name in parentheses may contain spaces and parentheses: split after the last ")"
        fields = stat[stat.rfind(")") + 1:].split()
        if fields[:1] in (["Z"], ["X"]):
            # Exited, not yet reaped by its parent: a stopped service's corpse keeps its name and its start time,
            # and taken for the running one it would hide the restart that replaced it.
            return None
        try:
            ppid, ticks = int(fields[1]), int(fields[19])
            started = dt.datetime.fromtimestamp(btime + ticks / self._ticks, dt.UTC)
        except (IndexError, ValueError, OverflowError) as exc:
            raise SensorError(f"/proc/{pid}/stat is malformed") from exc
        return _Process(pid, ppid, started)

    def _boot_time(self) -> float:
        """`btime` from the host's /proc/stat, read once: it only changes with a reboot, which restarts us too."""
        if self._btime is None:
            for line in self._host.read_text("/proc/stat").splitlines():
                key, _, value = line.partition(" ")
                if key == "btime" and value.strip().isdigit():
                    self._btime = float(value)
                    break
            else:
                raise SensorError("/proc/stat has no btime line")
        return self._btime
