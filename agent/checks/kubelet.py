"""Kubelet health: `KubeletUnhealthy` and `FrequentKubeletRestart`.

`KubeletUnhealthy`: the kubelet's own healthz on 127.0.0.1:10248, as node-problem-detector's health-checker, probed
with a debounce (`agent/services/healthz.py`: True after `failure_threshold` failed probes in a row, False on the first
good one), every 30 s while settled and every `recheck_interval` while a failure waits for its confirmation.

`FrequentKubeletRestart` comes from `restarts.RestartMonitor` (the `proc` or `systemd` source, see there).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from agent.bounds import bounded
from agent.host import HostRoot
from agent.model import CheckTiming, Observation
from agent.services.healthz import HEALTHZ_URL, ProbeSettings
from agent.services.restarts import CommandRunner, RestartConfig, RestartMonitor, run_command

UNHEALTHY = "KubeletUnhealthy"
FREQUENT_RESTART = "FrequentKubeletRestart"
RESTARTS = RestartConfig(process_names=("kubelet",), units=("kubelet",))


@dataclass(frozen=True)
class Config(ProbeSettings):
    healthz_url: str = bounded("http://127.0.0.1:10248/healthz", HEALTHZ_URL)
    restarts: RestartConfig = field(default_factory=lambda: RESTARTS)


class KubeletCheck:
    name = "kubelet"
    condition_types = (UNHEALTHY, FREQUENT_RESTART)

    def __init__(self, config: Config, host: HostRoot, *, run: CommandRunner = run_command,
                 clock_ticks: int | None = None) -> None:
        self._config = config
        self.healthz = config.probe("Kubelet", config.healthz_url)
        self._restarts = RestartMonitor(config.restarts, host, defaults=RESTARTS, condition_type=FREQUENT_RESTART,
                                        subject="kubelet", run=run, clock_ticks=clock_ticks)

    @property
    def timing(self) -> CheckTiming:
        return self.healthz.paced(self._config.timing)

    async def observe(self, now: dt.datetime) -> Observation:
        return Observation(self.name, now, conditions=(await self.healthz.report(), await self._restarts.observe(now)))

    async def close(self) -> None:
        """Release the probe's keep-alive connection (see `HoldsResources`)."""
        await self.healthz.close()
