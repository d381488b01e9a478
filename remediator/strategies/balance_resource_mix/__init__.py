"""BalanceResourceMix (the balancing engine): moves that bring each node's cpu:memory mix near the cluster's."""

from __future__ import annotations

from remediator.strategies.balance_resource_mix.args import BalanceResourceMixArgs, read_args
from remediator.strategies.balance_resource_mix.plan import KIND, NAME, plan
from remediator.strategies.balance_resource_mix.report import report_metrics
from remediator.strategies.strategy import Strategy


def _approval(args: BalanceResourceMixArgs) -> str:
    return args.approval


STRATEGY = Strategy(NAME, KIND, read_args, plan, report_metrics=report_metrics, approval=_approval)
