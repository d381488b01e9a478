"""The nodes of a search that can take a pod at all, worked out once for the searches of a plan that would find the
same, so that node fit walks only those and counts the rest.

At 20,000 nodes a settled cycle's failed searches walked 350,000 nodes, 85 % of them refused by the two checks that
read only the node, the pod's tolerations and node selection (`node_reasons`) and its requests against the node's pods
(`room_reasons`): GPU pods of RemoveDuplicates, the spread strategy and LowNodeUtilization trying every GPU node, all
full, for each replica. Those answers stay the same for the whole plan (the nodes, the taints planned and the pods'
requests do), so for one destinations tuple and one (placement, requests) they are worked out once: the nodes both
checks pass (`open`), walked in order with every check as before, and each other node's reason (`refused`).

What the two checks leave out changes with the plan, and is put right per search:
- the pod's own node and the excluded nodes: refused first for that (`current node`, `excluded`), as node fit does;
- nodes room is promised on since (`reserved`): node fit checks their room with what is promised, not the kept
  answer. Promised room only adds to what a node holds, so a node refused for room stays refused (for its reason then,
  worked out here); the books screen no search once a pod with a negative request is promised room.
Then a search that finds a node finds the same (a node left out takes no pod) and one that finds none counts the same
reasons, node for node, as a walk of every node.

A screen costs about one walk of every node, so a slot builds one only for the search after one that found no node
(which walked them all): a tuple searched once, or only up to a fit near its start, never pays for one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field

from remediator.model.records import NodeRecord

# node fit's first two reasons, before any check of the node: the pod's own node, a node the plan excludes
CURRENT_NODE = "current node"
EXCLUDED = "excluded"


@dataclass(frozen=True)
class FitScreen:
    open: tuple[str, ...]  # the nodes the two checks pass with nothing promised, in the search's order
    refused: dict[str, str]  # every other node of the search -> the first of the two checks it fails
    placed: frozenset[str]  # those of them refused by the first check (tolerations and node selection)
    base: Counter[str]  # their reasons counted, with the nodes lacking a scarce resource (never looked at)
    total: int  # the nodes a search counts: every one of the search's nodes that exists


@dataclass
class ScreenSlot:
    """One plan's searches through one tuple of nodes by pods alike in placement and requests (Books keeps them)."""

    nodes: tuple[str, ...]  # held: the slot is found by the tuple's id
    failed: bool = False  # a plain search through it found no node: it walked every node
    screen: FitScreen | None = field(default=None)

    def due(self) -> bool:
        """Whether a screen is worth building now: a search walked every node already, and another is to come."""
        return self.screen is None and self.failed


def build_screen(considered: Iterable[str], lacking: Counter[str], nodes: Mapping[str, NodeRecord],
                 placement: Callable[[NodeRecord], str | None],
                 room: Callable[[NodeRecord], str | None]) -> FitScreen:
    """`placement` and `room`: node fit's two kept checks for the pod (each memoized by the books' tables)."""
    open_: list[str] = []
    refused: dict[str, str] = {}
    placed: set[str] = set()
    base = Counter(lacking)
    total = sum(lacking.values())
    for name in considered:
        node = nodes.get(name)
        if node is None:
            continue
        total += 1
        why = placement(node)
        if why is not None:
            placed.add(name)
        else:
            why = room(node)
        if why is None:
            open_.append(name)
        else:
            refused[name] = why
            base[why] += 1
    return FitScreen(tuple(open_), refused, frozenset(placed), base, total)


def refusals(screen: FitScreen, walked: Counter[str], *, current: str, exclude: Collection[str],
             reserved: Mapping[str, object], held_room: Callable[[str], str | None]) -> dict[str, int]:
    """Every node's first failure -> how many nodes, for a search that walked the open nodes into `walked`:
    the kept reasons, put right for the pod's own node, the excluded ones and those room is promised on
    (`held_room`: node fit's room check of a refused node with what is promised there)."""
    counts = screen.base + walked
    refused = screen.refused

    def recount(name: str, why: str) -> None:
        counts[refused[name]] -= 1
        counts[why] += 1

    if current in refused:
        recount(current, CURRENT_NODE)
    for name in _among(exclude, refused):
        if name != current:
            recount(name, EXCLUDED)
    for name in _among(reserved, refused):
        if name == current or name in exclude or name in screen.placed:
            continue  # refused before room is looked at, or by a check promised room does not change
        why = held_room(name)
        # Promised room only adds to the node's requests: refused with none promised, it is refused with more.
        assert why is not None, f"{name}: room promised made a node refused for room take the pod"
        recount(name, why)
    return {why: n for why, n in counts.items() if n > 0}


def _among(names: Collection[str], refused: Mapping[str, str]) -> list[str]:
    """The `names` that are refused nodes, looked up from the smaller side."""
    if len(names) <= len(refused):
        return [n for n in names if n in refused]
    return [n for n in refused if n in names]
