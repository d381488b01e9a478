"""RemovePodsViolatingInterPodAntiAffinity: evict pods whose required anti-affinity is violated where they run."""

from __future__ import annotations

from remediator.strategies.remove_pods_violating_inter_pod_anti_affinity.args import read_args
from remediator.strategies.remove_pods_violating_inter_pod_anti_affinity.plan import KIND, NAME, plan
from remediator.strategies.strategy import Strategy

STRATEGY = Strategy(NAME, KIND, read_args, plan)
