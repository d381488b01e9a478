"""The arguments every descheduler plugin has, `namespaces` (include or exclude) and `labelSelector`: which pods a
strategy looks at at all. The policy's DefaultEvictor scope applies on top, in the gate."""

from __future__ import annotations

from dataclasses import dataclass

from remediator.model.records import LabelSelector, NodeRecord, PodRecord
from remediator.policy.fields import Namespaces, read_label_selector, read_namespaces
from remediator.policy.reader import Reader, Section
from remediator.scheduling.selectors import matches_labels
from remediator.state.snapshot import Snapshot

SCOPE_KEYS = ("namespaces", "labelSelector")


@dataclass(frozen=True)
class PodScope:
    namespaces: Namespaces = Namespaces()
    label_selector: LabelSelector | None = None

    def select(self, pods: list[PodRecord]) -> list[PodRecord]:
        """The selected ones of `pods`, with a comprehension per case (a node's pods, 150,000 of them a cycle)."""
        if self.label_selector is None:
            include, exclude = self.namespaces.include, self.namespaces.exclude
            if include:
                return [p for p in pods if p.namespace in include]
            return [p for p in pods if p.namespace not in exclude] if exclude else pods
        return [p for p in pods if self.selects(p)]

    def selects(self, pod: PodRecord) -> bool:
        ns = self.namespaces
        if (ns.include and pod.namespace not in ns.include) or pod.namespace in ns.exclude:
            return False
        return self.label_selector is None or matches_labels(self.label_selector, pod.labels)


def read_scope(r: Reader, args: Section) -> PodScope:
    return PodScope(namespaces=read_namespaces(r, args), label_selector=read_label_selector(r, args))


def ready_nodes(snapshot: Snapshot) -> list[NodeRecord]:
    """The nodes descheduler runs its plugins over: Ready ones (cordoned ones included), in name order."""
    return [snapshot.nodes[name] for name in sorted(snapshot.nodes) if snapshot.nodes[name].ready]
