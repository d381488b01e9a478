"""Which nodes offer the resources only some nodes have (GPUs and other extended resources), so node fit need not
look closely at the nodes that lack what a pod asks for.

On the 5,000-node benchmark cluster with 100 GPU nodes, a GPU pod's node-fit search walked past every general node
(each passing the taint and selector checks, then refused for "no nvidia.com/gpu"): 52,000 of a cycle's 62,000
node checks. Searching the nodes that offer what the pod asks for finds the same first fit, since every node left
out refuses the pod; a search that finds none counts the nodes left out as lacking the resource.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from remediator.model import NodeRecord, PodRecord


class Offering:
    """Built once per planning cycle from the nodes' allocatable resources."""

    def __init__(self, nodes: Mapping[str, NodeRecord], *, every: Sequence[str] | None = None) -> None:
        """`every`: the list of node names most searches go through (every node, roomiest first), which lives as
        long as this object and never changes: what is split of it is kept for the next pod asking alike."""
        self._nodes, self._every = nodes, every
        having: dict[str, set[str]] = {}
        for name, node in nodes.items():
            for resource in node.allocatable:
                having.setdefault(resource, set()).add(name)
        # Only the resources some node lacks narrow anything down.
        self._scarce = {r: names for r, names in having.items() if len(names) < len(nodes)}
        self._kept: dict[tuple[str, ...], tuple[list[str], Counter[str]]] = {}

    def wanted(self, pod: PodRecord) -> tuple[str, ...]:
        """The resources `pod` asks for (a quantity above zero) that not every node offers, sorted."""
        if not self._scarce:
            return ()
        return tuple(sorted(r for r, q in pod.requests.items() if q > 0 and r in self._scarce))

    def split(self, names: Iterable[str], resources: tuple[str, ...]) -> tuple[list[str], Counter[str]]:
        """(`names` that offer every one of `resources`, in their order; "no <resource>" -> how many of the others
        lack it, each counted under the first of `resources` it lacks). Names of no node are left out of both.
        Read-only results: they may be shared with the next caller."""
        keep = names is self._every
        if keep:
            kept = self._kept.get(resources)
            if kept is not None:
                return kept
        offering = [(r, self._scarce[r]) for r in resources]
        found: list[str] = []
        lacking: Counter[str] = Counter()
        for name in names:
            for resource, having in offering:
                if name not in having:
                    if name in self._nodes:
                        lacking[f"no {resource}"] += 1
                    break
            else:
                found.append(name)
        if keep:
            self._kept[resources] = (found, lacking)
        return found, lacking
