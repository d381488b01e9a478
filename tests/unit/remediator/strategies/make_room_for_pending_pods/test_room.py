"""Room's ranks against the per-node sums they replace, on random rooms with ties, negative room and zero asks, and
the roomiest and the least short found by walking the columns down (many nodes, few read) against the same sums,
updates between."""

from __future__ import annotations

import heapq
import random
from unittest import mock

from remediator.strategies.make_room_for_pending_pods.room import Room, Vector


def _rooms(rng: random.Random, count: int) -> dict[str, Vector]:
    # Few distinct values, so ties are common; some nodes overcommitted (negative room).
    return {f"n{i:03d}": (rng.choice((-100, 0, 250, 500, 4000)), rng.choice((-1, 0, 3, 8, 64)) * 2**20,
                          rng.choice((0, 2, 4, 110)))
            for i in range(count)}


def _needs(rng: random.Random) -> Vector:
    return rng.choice((0, 100, 300)), rng.choice((0, 2**20, 5 * 2**20)), 1


def test_shortfalls_are_the_per_node_sums() -> None:
    rng = random.Random(3)
    for _ in range(50):
        rooms = _rooms(rng, 60)
        room = Room(rooms.items(), 3)
        need = _needs(rng)
        pool = tuple(sorted(rng.sample([*rooms, "gone-1", "gone-2"], 30)))
        expected = [(sum([q - f for f, q in zip(rooms[n], need, strict=True) if q > f]), n)
                    for n in pool if n in rooms]
        assert room.shortfalls(pool, need) == expected
        assert room.shortfalls(pool, need) == expected  # the second ask uses the kept positions


def test_roomiest_is_the_per_node_ranking() -> None:
    rng = random.Random(4)
    for _ in range(200):
        rooms = _rooms(rng, rng.choice((5, 60)))
        room = Room(rooms.items(), 3)
        need = _needs(rng)
        skip = set(rng.sample(sorted(rooms), 3))
        count = rng.choice((1, 4, 10, 64))
        shares = [(-sum([min(r, 4 * q) / q for r, q in zip(rooms[n], need, strict=True) if q > 0]), n)
                  for n in rooms if n not in skip]
        assert room.roomiest(need, count, skip) == [n for _, n in heapq.nsmallest(count, shares)]


def test_an_update_is_read_back_by_node_and_ranked() -> None:
    room = Room([("a", (100, 100, 1)), ("b", (200, 200, 2))], 3)
    assert "a" in room and "c" not in room
    assert room.roomiest((100, 100, 1), 1, set()) == ["b"]
    assert room.roomiest((100, 100, 1), 0, set()) == []
    room.update("a", (900, 900, 9))
    assert room["a"] == (900, 900, 9)
    assert room.roomiest((100, 100, 1), 1, set()) == ["a"]
    assert room.shortfalls(("a", "b"), (300, 300, 1)) == [(0, "a"), (200, "b")]


def _ranking(rooms: dict[str, Vector], need: Vector, count: int, skip: set[str]) -> list[str]:
    shares = [(-sum([min(r, 4 * q) / q for r, q in zip(rooms[n], need, strict=True) if q > 0]), n)
              for n in rooms if n not in skip]
    return [n for _, n in heapq.nsmallest(count, shares)]


def _node_room(rng: random.Random) -> Vector:
    # Free memory mostly follows free cpu, as on nodes packed with alike pods (then a walk ends early), sometimes not;
    # a few nodes alike (ties at the cut); pod slots mostly past what a pod's share counts.
    cpu = rng.choice((rng.randrange(-500, 64000), 16000))
    memory = cpu * 2**22 + rng.randrange(-2**30, 2**30) if rng.random() < 0.8 else rng.randrange(-2**20, 2**38)
    return cpu, memory, rng.choice((0, 3, 110, 110, 110))


def test_the_roomiest_of_many_found_walking_the_columns_are_the_per_node_ranking_through_updates() -> None:
    rng = random.Random(5)
    walked = 0
    for _ in range(40):
        rooms = {f"n{i:04d}": _node_room(rng) for i in range(rng.choice((1500, 3000)))}
        room = Room(rooms.items(), 3)
        for _ in range(10):
            # Mostly pods too big for most nodes (as a stuck pod is: few nodes reach the four times it counts, so a
            # walk can end early); sometimes a small one, for which many nodes are alike at that cap (summed whole).
            need = rng.choice(((rng.randrange(8000, 20000), rng.randrange(2**33, 2**36), 1),
                               (0, rng.randrange(2**35, 2**37), 1), (rng.randrange(8000, 20000), 0, 0),
                               (rng.randrange(1, 4000), rng.randrange(1, 2**30), 1)))
            skip = set(rng.sample(sorted(rooms), rng.choice((0, 3, 32))))
            count = rng.choice((1, 16, 64))
            walked += room._most_shares(need, count + len(skip)) is not None
            assert room.roomiest(need, count, skip) == _ranking(rooms, need, count, skip)
            for name in rng.sample(sorted(rooms), 3):  # a plan's moves change a few nodes' room
                rooms[name] = _node_room(rng)
                room.update(name, rooms[name])
    assert walked > 150  # the big pods' asks were answered by the walk, not by summing every column


def test_the_least_short_given_walking_the_columns_are_the_per_node_order_through_updates() -> None:
    rng = random.Random(6)
    walked = 0
    for _ in range(60):
        small = rng.random() < 0.3
        rooms = _rooms(rng, 60) if small else {f"n{i:04d}": _node_room(rng) for i in range(rng.choice((400, 2000)))}
        room = Room(rooms.items(), 3)
        pool = tuple(sorted(rng.sample([*rooms, "gone-1"], len(rooms) // 2)))
        for _ in range(5):
            # A stuck pod: more than most nodes of its pool hold (so few or none are short of nothing, and a walk can
            # give the least short early)
            cpu = rng.randrange(40000, 70000)
            need = _needs(rng) if small else (cpu, cpu * 2**22, 1)
            expected = [n for _, n in sorted((sum([q - f for f, q in zip(rooms[n], need, strict=True) if q > f]), n)
                                             for n in pool if n in rooms)]
            read = rng.choice((1, 40, len(expected)))
            with mock.patch.object(room, "shortfalls", wraps=room.shortfalls) as summed:
                given = room.by_shortfall(pool, need)
                assert [next(given) for _ in range(min(read, len(expected)))] == expected[:read]
            walked += read == 1 and not small and not summed.called
            assert list(room.by_shortfall(pool, need)) == expected
            for name in rng.sample(sorted(rooms), 3):
                rooms[name] = _rooms(rng, 1)["n000"] if small else _node_room(rng)
                room.update(name, rooms[name])
    assert walked > 20  # the first of a big pool was given by the walk, not by summing the pool whole
