"""One spread constraint as the strategy balances it (declared by a pod, or one of its workload's defaults), and
which nodes count as its domains."""

from __future__ import annotations

from dataclasses import dataclass

from remediator.model.records import Effect, NodeRecord, PodRecord, SpreadConstraint
from remediator.scheduling.selectors import pod_fits_node_selection
from remediator.scheduling.tolerations import untolerated

_BLOCKING = (Effect.NO_SCHEDULE, Effect.NO_EXECUTE)


@dataclass(frozen=True)
class Constraint:
    spread: SpreadConstraint
    when: str  # DoNotSchedule | ScheduleAnyway
    declared_by: PodRecord  # its node selection and tolerations decide which nodes count (inclusion policies)

    def shape(self) -> tuple[object, ...]:
        """What decides the constraint's domains: its topology key and, under its inclusion policies, the declaring
        pod's node selection and tolerations. Constraints of one shape share their domains."""
        s, pod = self.spread, self.declared_by
        return (s.topology_key,
                (tuple(sorted(pod.node_selector.items())), pod.required_node_affinity) if s.honor_node_affinity
                else None,
                pod.tolerations if s.honor_node_taints else None)

    def includes(self, node: NodeRecord) -> bool:
        """nodeAffinityPolicy (default Honor) and nodeTaintsPolicy (default Ignore), with the declaring pod's terms."""
        pod = self.declared_by
        if self.spread.honor_node_affinity and not pod_fits_node_selection(pod, node):
            return False
        return not self.spread.honor_node_taints or not untolerated(pod.tolerations, node.taints, _BLOCKING)
