"""PodLifeTime: evict pods past a maximum age or in given states."""

from __future__ import annotations

from remediator.strategies.pod_life_time.args import read_args
from remediator.strategies.pod_life_time.plan import KIND, NAME, candidates
from remediator.strategies.strategy import Strategy, admitting

STRATEGY = Strategy(NAME, KIND, read_args, admitting(candidates), terminal_pods=True)
