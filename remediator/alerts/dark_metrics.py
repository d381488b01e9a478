"""The dark nodes' metrics (docs/dark-nodes.md), part of the remediator's registry."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge


@dataclass(frozen=True)
class DarkMetrics:
    nodes: Gauge
    needs_evidence: Gauge
    halted: Gauge
    fences: Counter
    unfences: Counter


def create_dark_metrics(r: CollectorRegistry) -> DarkMetrics:
    return DarkMetrics(
        nodes=Gauge("nodemedic_silent_nodes", "Nodes whose kubelet is silent, by what the second witness says: "
                    "kubelet-silent (the agent writes), dark, fenced, replacing, returning", ["seen"], registry=r),
        needs_evidence=Gauge("nodemedic_dark_node_needs_evidence",
                             "1 for each dark node whose pods stay because nothing proves the machine off",
                             ["node"], registry=r),
        halted=Gauge("nodemedic_dark_nodes_halted",
                     "1 for each zone (or the cluster) with more dark nodes than darkNodes.maxDarkPercent: the "
                     "network or the control plane failed, nothing is fenced there", ["group"], registry=r),
        fences=Counter("nodemedic_fences_total", "Dark nodes whose pods nodemedic freed, by the evidence that the "
                       "machine was off (person, reboot, nodeclaim)", ["evidence"], registry=r),
        unfences=Counter("nodemedic_unfences_total", "Fences ended: the node came back Ready and its agent reported",
                         registry=r),
    )
