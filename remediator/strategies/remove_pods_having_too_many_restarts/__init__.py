"""RemovePodsHavingTooManyRestarts: evict pods that restarted too often, and name the node when only its replicas
of a workload do."""

from __future__ import annotations

from remediator.strategies.remove_pods_having_too_many_restarts.args import read_args
from remediator.strategies.remove_pods_having_too_many_restarts.plan import KIND, NAME, plan
from remediator.strategies.remove_pods_having_too_many_restarts.report import NONE_FOUND, report_metrics
from remediator.strategies.strategy import Strategy

STRATEGY = Strategy(NAME, KIND, read_args, plan, terminal_pods=True, report_metrics=report_metrics,
                    standing_report=NONE_FOUND)
