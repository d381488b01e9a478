"""kube-proxy health: `KubeProxyUnhealthy` and `FrequentKubeProxyRestart`, as the kubelet check does them.

`KubeProxyUnhealthy`: kube-proxy's healthz (`:10256/healthz`, 503 while its rules have not been synced within its
healthz timeout), probed with the kubelet's debounce and pace (`agent/services/healthz.py`).
`FrequentKubeProxyRestart`: its restarts, from the process start times in the host's /proc (a DaemonSet pod's
process is found as a service's is) or from systemd (`restarts.RestartMonitor`).

Many clusters run no kube-proxy (a CNI that replaces it): until a process named `kube-proxy` is seen on the host or
its healthz has answered, the check reports nothing, and looks again every `absent_every` (one /proc scan).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from agent.bounds import Bounds, bounded
from agent.host import HostRoot
from agent.model import CheckTiming, Observation
from agent.services.healthz import HEALTHZ_URL, ProbeSettings
from agent.services.restarts import CommandRunner, RestartConfig, RestartMonitor, run_command

UNHEALTHY = "KubeProxyUnhealthy"
FREQUENT_RESTART = "FrequentKubeProxyRestart"
RESTARTS = RestartConfig(process_names=("kube-proxy",), units=("kube-proxy",))


@dataclass(frozen=True)
class Config(ProbeSettings):
    healthz_url: str = bounded("http://127.0.0.1:10256/healthz", HEALTHZ_URL)
    restarts: RestartConfig = field(default_factory=lambda: RESTARTS)
    absent_every: dt.timedelta = bounded(dt.timedelta(minutes=5), Bounds(not_shorter_than="timing.interval"))


class KubeProxyCheck:
    name = "kubeProxy"
    condition_types = (UNHEALTHY, FREQUENT_RESTART)

    def __init__(self, config: Config, host: HostRoot, *, run: CommandRunner = run_command,
                 clock_ticks: int | None = None) -> None:
        self._config = config
        self._host = host
        self.healthz = config.probe("KubeProxy", config.healthz_url)
        self._restarts = RestartMonitor(config.restarts, host, defaults=RESTARTS, condition_type=FREQUENT_RESTART,
                                        subject="kube-proxy", run=run, clock_ticks=clock_ticks)
        self._present = False
        self._next_look: dt.datetime | None = None

    @property
    def timing(self) -> CheckTiming:
        if self._present:
            return self.healthz.paced(self._config.timing)
        return CheckTiming(interval=self._config.absent_every, timeout=self._config.timing.timeout)

    async def observe(self, now: dt.datetime) -> Observation:
        if not self._present:
            if self._next_look is not None and now < self._next_look:
                return Observation(self.name, now)
            if not await self._found():
                self._next_look = now + self._config.absent_every
                return Observation(self.name, now)
            self._present = True
        return Observation(self.name, now, conditions=(await self.healthz.report(), await self._restarts.observe(now)))

    async def _found(self) -> bool:
        """kube-proxy runs here: its healthz answers (any status), or a process of its name lives."""
        failure = await self.healthz.probe()
        if failure is None or failure.startswith("HTTP "):
            return True
        names = set(self._config.restarts.process_names or RESTARTS.process_names)
        proc = self._host.path("/proc")
        try:
            entries = [e for e in proc.iterdir() if e.name.isdigit()]
        except OSError:
            return False
        for entry in entries:
            try:
                if (entry / "comm").read_text().strip() in names:
                    return True
            except OSError:
                continue
        return False

    async def close(self) -> None:
        await self.healthz.close()
