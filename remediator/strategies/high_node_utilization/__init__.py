"""HighNodeUtilization: empty underutilized nodes into the others, so the autoscaler can remove them."""

from __future__ import annotations

from remediator.strategies.high_node_utilization.args import read_args
from remediator.strategies.high_node_utilization.plan import KIND, NAME, plan
from remediator.strategies.strategy import Strategy

STRATEGY = Strategy(NAME, KIND, read_args, plan)
