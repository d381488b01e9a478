"""What one plan decides about nodes whose kubelet is silent: which are dark, which are fenced (the out-of-service
taint on), which NodeClaims are deleted, which fences end, and why every other dark node waits."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from enum import StrEnum

from nodemedic_common.fence_contract import Evidence


class Seen(StrEnum):
    """A silent node as its two witnesses, the kubelet and the agent, tell it."""

    KUBELET_SILENT = "kubelet-silent"  # Ready=Unknown, the agent still writes: the machine runs, the kubelet not
    DARK = "dark"  # both silent: nothing is known of the machine
    FENCED = "fenced"  # nodemedic put the out-of-service taint on
    REPLACING = "replacing"  # nodemedic deleted its NodeClaim: the node autoscaler ends the instance
    RETURNING = "returning"  # Ready again after a fence: the taint stays until its agent reports


@dataclass(frozen=True)
class SilentNode:
    node: str
    seen: Seen
    kubelet_silent_since: dt.datetime | None
    agent_heard: dt.datetime | None  # the newest lastHeartbeatTime of a condition the kubelet does not own
    why: str  # what nodemedic does about it, or what it waits for
    needs_evidence: bool = False  # dark and nothing proves the machine off: a person is asked (alerted)
    halted: bool = False  # too many dark nodes in its group: nothing fenced (alerted)


@dataclass(frozen=True)
class Fence:
    """Put the out-of-service taint on: the pod garbage collector frees the node's pods."""

    node: str
    evidence: Evidence
    detail: str
    pods: tuple[str, ...] = ()  # "namespace/name" of the pods it frees


@dataclass(frozen=True)
class ClaimDelete:
    """Delete the dark node's Karpenter NodeClaim: the autoscaler ends the instance and the node, freeing its pods."""

    node: str
    claim: str
    detail: str
    pods: tuple[str, ...] = ()


@dataclass(frozen=True)
class Unfence:
    """The node is back (Ready, its agent reporting), or a person's confirmation went stale: take off what
    nodemedic put on (its taint only if nodemedic's record says it put it there)."""

    node: str
    why: str
    taint: bool  # the out-of-service taint is nodemedic's and still on


@dataclass
class DarkPlan:
    nodes: dict[str, SilentNode] = field(default_factory=dict)
    fences: list[Fence] = field(default_factory=list)
    claim_deletes: list[ClaimDelete] = field(default_factory=list)
    unfences: list[Unfence] = field(default_factory=list)
    halted: dict[str, str] = field(default_factory=dict)  # group -> why nothing in it is fenced

    def count(self, seen: Seen) -> int:
        return sum(1 for n in self.nodes.values() if n.seen == seen)
