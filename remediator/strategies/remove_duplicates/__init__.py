"""RemoveDuplicates: spread the replicas of one owner that share a node over the nodes that can take them."""

from __future__ import annotations

from remediator.strategies.remove_duplicates.args import read_args
from remediator.strategies.remove_duplicates.plan import KIND, NAME, plan
from remediator.strategies.strategy import Strategy

STRATEGY = Strategy(NAME, KIND, read_args, plan)
