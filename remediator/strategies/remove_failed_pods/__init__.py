"""RemoveFailedPods: clear Failed pods (by reason, exit code, owner kind and age)."""

from __future__ import annotations

from remediator.strategies.remove_failed_pods.args import read_args
from remediator.strategies.remove_failed_pods.plan import KIND, NAME, candidates
from remediator.strategies.strategy import Strategy, admitting

STRATEGY = Strategy(NAME, KIND, read_args, admitting(candidates), terminal_pods=True)
