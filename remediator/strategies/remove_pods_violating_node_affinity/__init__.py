"""RemovePodsViolatingNodeAffinity: evict pods whose node no longer satisfies their (required or preferred) node
affinity, when a node that does can take them."""

from __future__ import annotations

from remediator.strategies.remove_pods_violating_node_affinity.args import read_args
from remediator.strategies.remove_pods_violating_node_affinity.plan import KIND, NAME, plan
from remediator.strategies.strategy import Strategy

STRATEGY = Strategy(NAME, KIND, read_args, plan)
