"""Kubelet health: `KubeletUnhealthy` and `FrequentKubeletRestart`.

`KubeletUnhealthy`: the kubelet's own healthz on 127.0.0.1:10248, as node-problem-detector's health-checker, probed
with a debounce (`agent/probes/healthz.py`: True after `failure_threshold` failed probes in a row, False on the first
good one), every 30 s while settled and every `recheck_interval` while a failure waits for its confirmation.

`FrequentKubeletRestart` comes from `restarts.RestartMonitor` (the `proc` or `systemd` source, see there).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from agent.bounds import AT_LEAST_ONE, bounded
from agent.host import HostRoot
from agent.model import CheckTiming, Observation
from agent.probes.healthz import HEALTHZ_URL, RECHECK_INTERVAL, REQUEST_TIMEOUT, HealthzProbe, ProbeTiming
from agent.sensors.restarts import CommandRunner, RestartConfig, RestartMonitor, run_command

UNHEALTHY = "KubeletUnhealthy"
FREQUENT_RESTART = "FrequentKubeletRestart"
# the timeout leaves room for a full request_timeout
TIMING = ProbeTiming(interval=dt.timedelta(seconds=30), timeout=dt.timedelta(seconds=15))
RESTARTS = RestartConfig(process_names=("kubelet",), units=("kubelet",))


@dataclass(frozen=True)
class Config:
    timing: CheckTiming = field(default_factory=lambda: TIMING)
    healthz_url: str = bounded("http://127.0.0.1:10248/healthz", HEALTHZ_URL)
    request_timeout: dt.timedelta = bounded(dt.timedelta(seconds=10), REQUEST_TIMEOUT)
    failure_threshold: int = bounded(3, AT_LEAST_ONE)
    recheck_interval: dt.timedelta = bounded(dt.timedelta(seconds=5), RECHECK_INTERVAL)
    restarts: RestartConfig = field(default_factory=lambda: RESTARTS)


class KubeletCheck:
    name = "kubelet"
    condition_types = (UNHEALTHY, FREQUENT_RESTART)

    def __init__(self, config: Config, host: HostRoot, *, run: CommandRunner = run_command,
                 clock_ticks: int | None = None) -> None:
        self._config = config
        self.healthz = HealthzProbe("Kubelet", config.healthz_url, request_timeout=config.request_timeout,
                                    failure_threshold=config.failure_threshold,
                                    recheck_interval=config.recheck_interval)
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
