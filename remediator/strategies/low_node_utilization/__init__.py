"""LowNodeUtilization: move pods off overutilized nodes onto underutilized ones."""

from __future__ import annotations

from remediator.strategies.low_node_utilization.args import read_args
from remediator.strategies.low_node_utilization.plan import KIND, NAME, plan
from remediator.strategies.strategy import Strategy

STRATEGY = Strategy(NAME, KIND, read_args, plan)
