"""HighNodeUtilization: empty underutilized nodes into the others, so the autoscaler can remove them."""

from __future__ import annotations

from remediator.strategies.high_node_utilization.args import HighNodeUtilizationArgs, read_args
from remediator.strategies.high_node_utilization.consolidation import CONSOLIDATION_TAINT
from remediator.strategies.high_node_utilization.plan import KIND, NAME, plan
from remediator.strategies.strategy import Strategy


def _taints(args: HighNodeUtilizationArgs) -> bool:
    return args.taint_drained_nodes


STRATEGY = Strategy(NAME, KIND, read_args, plan, taint=CONSOLIDATION_TAINT, taints=_taints, empties_nodes=True,
                    packing="empties underused nodes for the autoscaler")
