"""`nodemedic-remediator scheduler-config`: the KubeSchedulerConfiguration that places pods as the policy plans them.

Printed as YAML with a comment on each choice, for the cluster's own kube-scheduler (`--config`) or for the chart's
second scheduler (a kube-scheduler Deployment whose profile pods select with `schedulerName`, where the managed
control plane's scheduler cannot be changed). The profiles it writes are the ones the policy's `scheduler` section
names (policy/scheduler.py), so the topology-spread strategy repairs with the constraints the scheduler places with.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from nodemedic_common.terminal_text import printable
from remediator.model.records import DefaultConstraint
from remediator.policy.model import Policy
from remediator.policy.scheduler import DEFAULT_SCHEDULER
from remediator.strategies import STRATEGIES

API_VERSION = "kubescheduler.config.k8s.io/v1"
# PodTopologySpread's score weight. The scheduler adds each score plugin's 0-100 score times its weight; the ones that
# differ between nodes for a plain workload are NodeResourcesFit and NodeResourcesBalancedAllocation (weight 1 each,
# at most 200 together). With one pod of skew, PodTopologySpread's normalized score differs by at least 50 between
# the fullest and the emptiest domain of a small workload, so weight 5 (250) outweighs resource balance: the weight
# the zone article gave SelectorSpreadPriority, PodTopologySpread's predecessor.
SPREAD_WEIGHT = 5
SECOND_SCHEDULER_LEASE = "nodemedic-scheduler"


@dataclass(frozen=True)
class Connection:
    """Where the scheduler connects and how it elects a leader."""

    kubeconfig: str = ""  # "" : in-cluster credentials
    leader_elect: bool = True
    lease_namespace: str = "kube-system"
    lease_name: str = ""  # "" : kube-scheduler's own Lease for default-scheduler, else SECOND_SCHEDULER_LEASE


def render(policy: Policy, source: str, connection: Connection) -> str:
    """`source`: the policy file's name, as the comments say it (escaped: a newline in it would end the comment and
    start YAML keys of the file's choosing)."""
    s = policy.scheduler
    source = printable(source)
    lines = [
        f"# KubeSchedulerConfiguration from {source} (nodemedic-remediator scheduler-config): the scheduler places",
        "# pods as nodemedic's policy plans them, so replacements of the pods it moves stay where it moved them.",
        f"apiVersion: {API_VERSION}",
        "kind: KubeSchedulerConfiguration",
    ]
    if not s.configured:
        lines[2:2] = [
            f"# {source} has no `scheduler` section: nodemedic plans as if the cluster's scheduler ran",
            "# kube-scheduler's own defaults. Once this configuration runs, add `scheduler: {}` to the policy (or",
            "# the section with these constraints) so that nodemedic repairs with what the scheduler places with.",
        ]
    if connection.kubeconfig:
        lines += ["clientConnection:", f"  kubeconfig: {_q(connection.kubeconfig)}"]
    lease = connection.lease_name or ("kube-scheduler" if s.profile == DEFAULT_SCHEDULER else SECOND_SCHEDULER_LEASE)
    lines += ["leaderElection:", f"  leaderElect: {str(connection.leader_elect).lower()}"]
    if connection.leader_elect:
        lines += ["  # A second scheduler elects its own leader: on kube-scheduler's Lease one of them would stop.",
                  f"  resourceName: {_q(lease)}", f"  resourceNamespace: {_q(connection.lease_namespace)}"]
    lines += ["profiles:"]
    packs_here = s.packing_profile == s.profile
    lines += _spread_profile(s.profile, s.default_constraints, packing=packs_here)
    if s.packing_profile and not packs_here:
        lines += _packing_profile(s.packing_profile)
    return "\n".join(lines) + "\n"


def _spread_profile(name: str, constraints: tuple[DefaultConstraint, ...], *, packing: bool) -> list[str]:
    who = ("the cluster's default profile: every pod without a schedulerName" if name == DEFAULT_SCHEDULER
           else f"pods with schedulerName: {printable(name)} (a second scheduler)")
    lines = [
        f"# Spreading: {who}.",
        f"- schedulerName: {_q(name)}",
        "  plugins:",
        "    score:",
        "      enabled:",
        f"      # Weight {SPREAD_WEIGHT} against 1 for each resource score: one pod of skew outweighs any",
        "      # difference in free resources, so a Deployment's replicas stay balanced across zones, also",
        "      # through a rolling update.",
        "      - name: PodTopologySpread",
        f"        weight: {SPREAD_WEIGHT}",
        "  pluginConfig:",
        "  - name: PodTopologySpread",
        "    args:",
        "      # The policy's scheduler.defaultConstraints, for every pod of a Service, ReplicaSet, StatefulSet or",
        "      # ReplicationController that declares no topologySpreadConstraints; nodemedic's topology-spread",
        "      # strategy repairs with the same ones.",
        "      defaultingType: List",
    ]
    lines += _constraints(constraints)
    if packing:
        lines += _most_allocated("  ", "Packing in the same profile (scheduler.packingProfile names it too): "
                                       + _packers())
    return lines


def _packing_profile(name: str) -> list[str]:
    return [
        f"# Packing, for pods with schedulerName: {printable(name)}: {_packers()},",
        "# and only a scheduler that fills the fullest node first keeps the replacements off the emptier nodes",
        "# (descheduler #668). No default spreading here: it would pull replacements back apart.",
        f"- schedulerName: {_q(name)}",
        "  pluginConfig:",
        "  - name: PodTopologySpread",
        "    args:",
        "      defaultingType: List",
        "      defaultConstraints: []",
        *_most_allocated("  ", "MostAllocated scores the fullest node highest"),
    ]


def _packers() -> str:
    """The strategies that need a packing profile, and why (strategies/strategy.py: `packing`)."""
    return "; ".join(f"{s.name} {s.packing}" for s in STRATEGIES.values() if s.packing)


def _most_allocated(indent: str, why: str) -> list[str]:
    return [
        f"{indent}# {why}.",
        f"{indent}- name: NodeResourcesFit",
        f"{indent}  args:",
        f"{indent}    scoringStrategy:",
        f"{indent}      type: MostAllocated",
        f"{indent}      resources: [{{name: cpu, weight: 1}}, {{name: memory, weight: 1}}]",
    ]


def _constraints(constraints: tuple[DefaultConstraint, ...]) -> list[str]:
    if not constraints:
        return ["      defaultConstraints: []"]
    lines = ["      defaultConstraints:"]
    for c in constraints:
        lines += [f"      - maxSkew: {c.max_skew}", f"        topologyKey: {_q(c.topology_key)}",
                  f"        whenUnsatisfiable: {c.when_unsatisfiable}"]
    return lines


def _q(text: str) -> str:
    """A YAML scalar that reads back as exactly `text` (JSON strings are YAML)."""
    return json.dumps(text)
