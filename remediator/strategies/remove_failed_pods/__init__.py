"""RemoveFailedPods: clear Failed pods (by reason, exit code, owner kind and age)."""

from __future__ import annotations

from remediator.strategies.remove_failed_pods.args import read_args
from remediator.strategies.remove_failed_pods.plan import KIND, NAME, plan
from remediator.strategies.strategy import Strategy

STRATEGY = Strategy(NAME, KIND, read_args, plan, terminal_pods=True)
