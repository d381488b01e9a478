"""RemovePodsViolatingNodeTaints: evict the pods that do not tolerate a node's (owned) NoSchedule taints."""

from __future__ import annotations

from remediator.strategies.remove_pods_violating_node_taints.args import read_args
from remediator.strategies.remove_pods_violating_node_taints.plan import KIND, NAME, plan
from remediator.strategies.strategy import Strategy

STRATEGY = Strategy(NAME, KIND, read_args, plan)
