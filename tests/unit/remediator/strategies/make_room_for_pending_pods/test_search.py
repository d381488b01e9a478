"""The placement search against the article's example and against the exhaustive optimum on small clusters."""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping, Sequence

from remediator.strategies.make_room_for_pending_pods.search import Found, Limits, Mover, Vector, covers, find_plan, sub

MB = 1  # memory in MB: the article's units


def _free(alloc: Mapping[str, Vector], pods: Sequence[Mover]) -> dict[str, Vector]:
    free = dict(alloc)
    for p in pods:
        free[p.node] = sub(free[p.node], p.requests)
    return free


def _by_node(pods: Sequence[Mover]) -> dict[str, list[Mover]]:
    out: dict[str, list[Mover]] = {}
    for p in pods:
        out.setdefault(p.node, []).append(p)
    return out


def _anywhere(pod: Mover, node: str) -> bool:
    return True


def test_the_articles_example_is_one_migration() -> None:
    """Three nodes of 1000m / 2000 MB, nine pods, a pending pod of 300m / 600 MB (docs/fragmentation.md)."""
    alloc = {n: (1000, 2000 * MB, 110) for n in ("node-1", "node-2", "node-3")}
    table = {"node-1": [(400, 400), (200, 600), (200, 600)],
             "node-2": [(300, 300), (300, 300), (200, 400)],
             "node-3": [(200, 500), (200, 500), (300, 500)]}
    pods = [Mover(f"{n}/p{i}", n, (c, m * MB, 1)) for n, rows in table.items() for i, (c, m) in enumerate(rows)]
    need = (300, 600 * MB, 1)
    free = _free(alloc, pods)
    assert not any(covers(room, need) for room in free.values())  # pending: no single node has room
    assert covers(tuple(map(sum, zip(*free.values(), strict=True))), need)  # the cluster as a whole has plenty
    found = find_plan(need, list(alloc), free, _by_node(pods), _anywhere)
    assert found is not None
    assert len(found.moves) == 1
    (move,) = found.moves
    assert move.pod.node == found.target and move.destination != found.target
    after = _after(alloc, pods, found)
    assert covers(after[found.target], need) and all(min(v) >= 0 for v in after.values())


def _optimum(alloc: Mapping[str, Vector], pods: Sequence[Mover], need: Vector, most: int) -> int | None:
    """Exhaustive: the fewest pods whose moves (each to any node but its own) let `need` fit some node."""
    nodes = list(alloc)
    base = _free(alloc, pods)
    for size in range(1, most + 1):
        for chosen in itertools.combinations(pods, size):
            for dests in itertools.product(nodes, repeat=size):
                if any(d == p.node for p, d in zip(chosen, dests, strict=True)):
                    continue
                free = dict(base)
                for p, d in zip(chosen, dests, strict=True):
                    free[p.node] = tuple(a + b for a, b in zip(free[p.node], p.requests, strict=True))
                    free[d] = sub(free[d], p.requests)
                if any(min(v) < 0 for v in free.values()):
                    continue
                if any(covers(free[n], need) for n in nodes):
                    return size
    return None


def _after(alloc: Mapping[str, Vector], pods: Sequence[Mover], found: Found) -> dict[str, Vector]:
    """Free room once the plan's moves are made and the pending pod has landed on the target."""
    free = _free(alloc, pods)
    for move in found.moves:
        free[move.pod.node] = tuple(a + b for a, b in zip(free[move.pod.node], move.pod.requests, strict=True))
        free[move.destination] = sub(free[move.destination], move.pod.requests)
    return free


def _random_case(rng: random.Random) -> tuple[dict[str, Vector], list[Mover], Vector] | None:
    nodes = {f"n{i}": (1000, 2000, 8) for i in range(rng.randint(3, 4))}
    pods: list[Mover] = []
    for n in nodes:
        cpu, mem = 0, 0
        for i in range(rng.randint(2, 4)):
            c, m = rng.choice((100, 200, 300, 400)), rng.choice((200, 400, 600, 800))
            if cpu + c > 1000 or mem + m > 2000:
                break
            cpu, mem = cpu + c, mem + m
            pods.append(Mover(f"{n}/p{i}", n, (c, m, 1), cost=rng.random()))
    need = (rng.choice((200, 300, 400, 500)), rng.choice((400, 600, 800, 1000)), 1)
    free = _free(nodes, pods)
    if any(covers(room, need) for room in free.values()):
        return None  # fits already
    if not covers(tuple(map(sum, zip(*free.values(), strict=True))), need):
        return None  # a real crunch, not fragmentation
    return nodes, pods, need


def test_plan_size_against_the_exhaustive_optimum() -> None:
    rng = random.Random(18)
    cases = equal = solvable = 0
    worst = 0
    while cases < 500:
        case = _random_case(rng)
        if case is None:
            continue
        nodes, pods, need = case
        best = _optimum(nodes, pods, need, most=4)
        found = find_plan(need, list(nodes), _free(nodes, pods), _by_node(pods), _anywhere,
                          limits=Limits(max_evictions=5, depth=2))
        cases += 1
        if best is None:
            # Nothing within 4 moves: the engine may find a longer plan or none, never a shorter one.
            assert found is None or len(found.moves) > 4
            equal += 1
            continue
        solvable += 1
        assert found is not None, f"case {cases}: optimum {best}, engine found nothing"
        after = _after(nodes, pods, found)
        assert all(min(room) >= 0 for room in after.values()), f"case {cases}: the plan overfills a node"
        assert covers(after[found.target], need), f"case {cases}: the plan does not free the target"
        assert len({m.pod.key for m in found.moves}) == len(found.moves) and all(
            m.destination != m.pod.node for m in found.moves)
        extra = len(found.moves) - best
        assert extra >= 0, f"case {cases}: engine beat the exhaustive optimum — the test's model is wrong"
        worst = max(worst, extra)
        equal += extra == 0
    share = equal / cases
    print(f"placement search: plan size == exhaustive optimum in {equal}/{cases} cases ({share:.1%}); "
          f"{solvable} solvable within 4 moves; worst excess {worst}")
    assert share >= 0.95
    assert worst <= 1
