"""Container runtime health: `ContainerRuntimeUnhealthy` and `FrequentContainerRuntimeRestart`.

Health signal: the first CRI socket among `sockets` that exists (under the host root) must answer a gRPC
`runtime.v1.RuntimeService/Version` call within `probe_timeout`. That is what `crictl version` does, and it proves
more than a connect: the runtime's gRPC server is serving and its CRI plugin is loaded. The call is spoken with
the standard library, HTTP/2 framing by hand (`cri_wire`: what is sent, and a reader of the reply that takes only
what RFC 9113 allows and only as much as a Version answer needs); the answer is parsed for the runtime's name and
version for the message. The probe's timeout always ends it: its connection is aborted, never closed gracefully,
so a server that does not read cannot hold it. One failed probe is enough (as node-problem-detector's
health-checker): a runtime that cannot answer a Version call within seconds cannot start pods either. Not the
runtime's fault, so Unknown rather than True: the agent may not open the socket, or host root + socket path exceed
the 107 bytes a unix socket address holds.

Restart frequency comes from `restarts.RestartMonitor` (see there for the `proc` and `systemd` sources).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from agent.bounds import ZERO, Bounds, bounded, normal_absolute_path
from agent.host import HostRoot
from agent.model import CheckTiming, ConditionReport, Observation, Status
from agent.services.cri_wire import MAX_FRAME, ProbeError, VersionReply, version_request
from agent.services.restarts import CommandRunner, RestartConfig, RestartMonitor, run_command
from nodemedic_common.durations import format_duration

UNHEALTHY = "ContainerRuntimeUnhealthy"
FREQUENT_RESTART = "FrequentContainerRuntimeRestart"

MAX_UNIX_PATH = 107  # sizeof(sockaddr_un.sun_path) - 1 on Linux
READ_SIZE = 9 + MAX_FRAME  # one frame of the largest size we accept
RESTARTS = RestartConfig(process_names=("containerd", "crio"), units=("containerd", "crio"))


@dataclass(frozen=True)
class Config:
    timing: CheckTiming = field(default_factory=CheckTiming)
    sockets: tuple[str, ...] = bounded(("/run/containerd/containerd.sock", "/var/run/crio/crio.sock"),
                                       Bounds(not_empty=True, form=normal_absolute_path))
    probe_timeout: dt.timedelta = bounded(dt.timedelta(seconds=5), Bounds(above=ZERO, shorter_than="timing.timeout"))
    restarts: RestartConfig = field(default_factory=lambda: RESTARTS)


async def probe(path: Path) -> str:
    """Call Version on the CRI socket at `path`; the runtime's "name version" on success, ProbeError otherwise.
    The caller bounds it in time: nothing here waits past a cancellation, the connection's close included."""
    try:
        reader, writer = await asyncio.open_unix_connection(str(path))
    except PermissionError:  # our privileges, not the runtime's health: the caller reports Unknown
        raise
    except OSError as exc:
        raise ProbeError(f"cannot connect: {exc.strerror or exc}") from exc
    try:
        return await _call_version(reader, writer)
    except ConnectionError as exc:
        raise ProbeError("closed the connection without answering") from exc
    finally:
        # abort, not close: a graceful close first flushes what we wrote, and a server that does not read would
        # hold it (and the probe, past its timeout) forever. Nothing unsent matters once the call is over.
        writer.transport.abort()
        with contextlib.suppress(OSError):
            await writer.wait_closed()  # the transport is already closing: done within a loop iteration


async def _call_version(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> str:
    writer.write(version_request())
    await writer.drain()
    reply = VersionReply()
    while True:
        data = await reader.read(READ_SIZE)
        if not data:
            raise ProbeError("closed the connection without answering")
        acks, runtime = reply.feed(data)
        if acks:  # a few hundred bytes at most per probe (VersionReply acknowledges only a few frames)
            writer.write(acks)
            await writer.drain()
        if runtime is not None:
            return runtime


class ContainerRuntimeCheck:
    name = "runtime"
    condition_types = (UNHEALTHY, FREQUENT_RESTART)

    def __init__(self, config: Config, host: HostRoot, *, run: CommandRunner = run_command,
                 clock_ticks: int | None = None) -> None:
        self.timing = config.timing
        self._config = config
        self._host = host
        self._restarts = RestartMonitor(config.restarts, host, defaults=RESTARTS, condition_type=FREQUENT_RESTART,
                                        subject="container runtime", run=run, clock_ticks=clock_ticks)

    async def observe(self, now: dt.datetime) -> Observation:
        return Observation(self.name, now, conditions=(await self._health(), await self._restarts.observe(now)))

    async def _health(self) -> ConditionReport:
        socket = self._find_socket()
        if socket is None:
            return ConditionReport(UNHEALTHY, Status.TRUE, "ContainerRuntimeSocketMissing",
                                   f"no CRI socket at {', '.join(self._config.sockets)}")
        host_path, path = socket
        if len(os.fsencode(path)) > MAX_UNIX_PATH:  # a long --host-root, not the runtime's fault
            return ConditionReport(UNHEALTHY, Status.UNKNOWN, "ContainerRuntimeHealthUnknown",
                                   f"{path} is too long for a unix socket address ({MAX_UNIX_PATH} bytes)")
        timeout = self._config.probe_timeout
        try:
            async with asyncio.timeout(timeout.total_seconds()):
                runtime = await probe(path)
        except TimeoutError:
            message = f"{host_path} did not answer a CRI Version call within {format_duration(timeout)}"
        except PermissionError as exc:
            return ConditionReport(UNHEALTHY, Status.UNKNOWN, "ContainerRuntimeHealthUnknown",
                                   f"the agent may not connect to {host_path}: {exc.strerror or exc}")
        except ProbeError as exc:
            message = f"{host_path}: {exc}"
        else:
            return ConditionReport(UNHEALTHY, Status.FALSE, "ContainerRuntimeIsHealthy",
                                   f"{runtime} answers CRI Version on {host_path}")
        return ConditionReport(UNHEALTHY, Status.TRUE, "ContainerRuntimeUnhealthy", message)

    def _find_socket(self) -> tuple[str, Path] | None:
        for host_path in self._config.sockets:
            try:
                path = self._host.resolve(host_path)
                if stat.S_ISSOCK(path.stat().st_mode):
                    return host_path, path
            except OSError:  # absent, or a dangling link: try the next candidate
                continue
        return None
