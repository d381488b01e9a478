"""Which nodes offer the resources only some nodes have (GPUs and other extended resources), so node fit need not
look closely at the nodes that lack what a pod asks for.

On the 5,000-node benchmark cluster with 100 GPU nodes, a GPU pod's node-fit search walked past every general node
(each passing the taint and selector checks, then refused for "no nvidia.com/gpu"): 52,000 of a cycle's 62,000
node checks. Searching the nodes that offer what the pod asks for finds the same first fit, since every node left
out refuses the pod; a search that finds none counts the nodes left out as lacking the resource.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from remediator.model.records import NodeRecord, PodRecord


class Offering:
    """Built once per planning cycle from the nodes' allocatable resources."""

    def __init__(self, nodes: Mapping[str, NodeRecord]) -> None:
        self._nodes = nodes
        having: dict[str, set[str]] = {}
        for name, node in nodes.items():
            for resource in node.allocatable:
                having.setdefault(resource, set()).add(name)
        # Only the resources some node lacks narrow anything down.
        self._scarce = {r: names for r, names in having.items() if len(names) < len(nodes)}
        # (id of a tuple of names, resources) -> (the tuple, held so that its id stays its own, the split)
        self._kept: dict[tuple[int, tuple[str, ...]], tuple[tuple[str, ...], list[str], Counter[str]]] = {}

    def wanted(self, pod: PodRecord) -> tuple[str, ...]:
        """The resources `pod` asks for (a quantity above zero) that not every node offers, sorted."""
        if not self._scarce:
            return ()
        return tuple(sorted(r for r, q in pod.requests.items() if q > 0 and r in self._scarce))

    def split(self, names: Iterable[str], resources: tuple[str, ...]) -> tuple[list[str], Counter[str]]:
        """(`names` that offer every one of `resources`, in their order; "no <resource>" -> how many of the others
        lack it, each counted under the first of `resources` it lacks). Names of no node are left out of both.
        A tuple cannot change, so its split is kept for the next pod asking for the same resources (the node lists
        a cycle searches are tuples: every node roomiest first, a strategy's destinations); the results are shared,
        read-only."""
        if isinstance(names, tuple):
            kept = self._kept.get((id(names), resources))
            if kept is not None:
                return kept[1], kept[2]
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
        if isinstance(names, tuple):
            self._kept[(id(names), resources)] = (names, found, lacking)
        return found, lacking
