"""The stream benchmark's pure parts: a day of Deployment events from a seed, and the arithmetic of its figures.

`plan` turns (seed, hours, deployments) into the same list of events every time: Deployments arriving (some already
there at hour 0, as a cluster never starts a day empty), scaled with the daily cycle at each hour, and leaving when
their lifetime ends. Shapes, replicas, lifetimes and the cycle come from hack/bench/lib/trace_figures.py. Times are
in simulated hours; the runner maps them onto real seconds (`--hour-seconds`).

`node_hours` and `DisruptionBook` are what the runner measures with, kept here so that they are tested on numbers.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from hack.bench.lib import trace_figures as tf


class Kind(StrEnum):
    CREATE = "create"
    SCALE = "scale"
    DELETE = "delete"


@dataclass(frozen=True)
class Deployment:
    name: str
    cpu_m: int  # one pod's request, after trace_figures.SCALE
    memory_mi: int
    replicas: int  # its base replicas, before the daily cycle
    arrive_h: float
    leave_h: float  # may lie past the day's end: it stays to the end


@dataclass(frozen=True)
class Event:
    at_h: float
    kind: Kind
    deployment: str
    replicas: int  # after the event (0 for a delete)


@dataclass(frozen=True)
class Plan:
    deployments: tuple[Deployment, ...]
    events: tuple[Event, ...]

    def by_name(self) -> dict[str, Deployment]:
        return {d.name: d for d in self.deployments}


INITIAL_FRACTION = 0.4  # of the Deployments, those already running at hour 0
# The stream's hour 0 is the trace's hour 9, its quietest (hours 9-13 see 2-4 arrivals, hours 22-1 see 19-33): the
# day starts calm and builds up to its peaks, instead of opening at one.
START_HOUR = 9
ORDER = {Kind.DELETE: 0, Kind.SCALE: 1, Kind.CREATE: 2}  # at one moment: room is given back before it is asked


def cycled(base: int, hour: int) -> int:
    """A Deployment's replicas at `hour`: its base times the trace's demand at that hour, at least 1."""
    return max(1, round(base * tf.demand_factor(hour + START_HOUR)))


def plan(seed: int, *, hours: int, deployments: int) -> Plan:
    """The day's Deployments and their events, the same for the same arguments."""
    if hours < 1 or deployments < 1:
        raise ValueError(f"a day of at least 1 hour and 1 Deployment, got {hours} h, {deployments}")
    rng = random.Random(seed)
    made: list[Deployment] = []
    initial = round(deployments * INITIAL_FRACTION)
    for i in range(deployments):
        shape = tf.draw_shape(rng)
        cpu, memory = shape.scaled()
        life = tf.draw_lifetime_hours(rng)
        if i < initial:
            # Already running at the start: what is left of its life is uniform over its lifetime.
            arrive, left = 0.0, life * rng.random()
        else:
            arrive, left = tf.draw_hour(rng, hours, start=START_HOUR), life
        made.append(Deployment(name=f"d{i:03d}", cpu_m=cpu, memory_mi=memory, replicas=tf.draw_replicas(rng),
                               arrive_h=round(arrive, 4), leave_h=round(arrive + max(left, 0.05), 4)))
    events: list[Event] = []
    for d in made:
        events.append(Event(d.arrive_h, Kind.CREATE, d.name, cycled(d.replicas, int(d.arrive_h))))
        # Each Deployment follows the cycle at its own minute of the hour, so that a whole pool does not scale at
        # once (an autoscaler sees a day of many small changes, not 24 steps).
        offset = rng.random()
        current = events[-1].replicas
        for hour in range(int(d.arrive_h) + 1, hours):
            at = hour + offset
            if at >= d.leave_h:
                break
            wanted = cycled(d.replicas, hour)
            if wanted != current:
                events.append(Event(round(at, 4), Kind.SCALE, d.name, wanted))
                current = wanted
        if d.leave_h < hours:
            events.append(Event(d.leave_h, Kind.DELETE, d.name, 0))
    events.sort(key=lambda e: (e.at_h, ORDER[e.kind], e.deployment))
    return Plan(tuple(made), tuple(events))


def peak_requested(p: Plan) -> tuple[int, int, float]:
    """(pods, millicores, at hour) at the plan's busiest moment by cpu asked: what the pool must hold at most."""
    by_name = p.by_name()
    replicas: dict[str, int] = {}
    best = (0, 0, 0.0)
    for e in p.events:
        if e.kind is Kind.DELETE:
            replicas.pop(e.deployment, None)
        else:
            replicas[e.deployment] = e.replicas
        cpu = sum(n * by_name[d].cpu_m for d, n in replicas.items())
        if cpu > best[1]:
            best = (sum(replicas.values()), cpu, e.at_h)
    return best


def node_hours(added: Mapping[str, float], removed: Mapping[str, float], *, start: float, end: float,
               hour_seconds: float) -> float:
    """Simulated node-hours over [start, end] (real seconds): each node from when it was added (or `start`) to when it
    was removed (or `end`). One simulated hour is `hour_seconds` real seconds, so a node up for `hour_seconds`
    counts one node-hour."""
    if hour_seconds <= 0:
        raise ValueError(f"hour_seconds must be positive, got {hour_seconds}")
    total = 0.0
    for node, up in added.items():
        down = removed.get(node, end)
        total += max(0.0, min(end, down) - max(start, up))
    return total / hour_seconds


@dataclass
class DisruptionBook:
    """Pods that stopped serving without the stream asking, per Deployment, against its PDB (maxUnavailable 1).

    Fed one sample at a time: for each Deployment, the pods serving now and the pods that exist now (not
    terminating). A pod that served at the last sample and no longer exists was either removed by the stream (a
    scale-down it announced with `expect`, or the Deployment's deletion with `retire`) or disrupted (evicted by
    nodemedic or Karpenter, or deleted with its node). A disruption stays open until the Deployment serves as many
    pods as it did before it (or as many as it now wants, if it wants fewer). More open disruptions at once than the
    PDB allows is a violation.
    """

    max_unavailable: int = 1
    serving: dict[str, set[str]] = field(default_factory=dict)
    existing: dict[str, set[str]] = field(default_factory=dict)
    expected: dict[str, int] = field(default_factory=dict)  # removals the stream announced, not yet seen
    retired: set[str] = field(default_factory=set)
    open: dict[str, list[int]] = field(default_factory=dict)  # per Deployment: serving count before each disruption
    violating: set[str] = field(default_factory=set)
    disruptions: int = 0
    violations: int = 0  # times a Deployment went over its PDB (one however long it stays over)
    worst: int = 0  # most disruptions open at once in one Deployment

    def expect(self, deployment: str, removals: int) -> None:
        self.expected[deployment] = self.expected.get(deployment, 0) + max(0, removals)

    def retire(self, deployment: str) -> None:
        self.retired.add(deployment)
        for book in (self.serving, self.existing, self.open):
            book.pop(deployment, None)
        self.violating.discard(deployment)

    def sample(self, serving: Mapping[str, set[str]], existing: Mapping[str, set[str]],
               wanted: Mapping[str, int]) -> None:
        """`serving` and `existing`: pod names per Deployment now; `wanted`: the replicas the stream asks now."""
        for deployment in set(self.existing) | set(existing):
            if deployment in self.retired:
                continue
            before = self.serving.get(deployment, set())
            now, alive = serving.get(deployment, set()), existing.get(deployment, set())
            gone = before - alive
            # A scale-down removes pods that do not serve yet first (the ReplicaSet controller's order): those are
            # counted against what the stream announced before the serving ones are.
            gone_other = (self.existing.get(deployment, set()) - before) - alive
            budget = self.expected.get(deployment, 0)
            budget -= min(budget, len(gone_other))
            ours = min(len(gone), budget)
            self.expected[deployment] = budget - ours
            opened = self.open.setdefault(deployment, [])
            for _ in range(len(gone) - ours):
                opened.append(len(before))
                self.disruptions += 1
            # The oldest first: closed once the Deployment is back to what it served before (or to what it wants).
            while opened and len(now) >= min(opened[0], wanted.get(deployment, 0)):
                opened.pop(0)
            if len(opened) > self.max_unavailable:
                if deployment not in self.violating:
                    self.violations += 1
                self.violating.add(deployment)
            else:
                self.violating.discard(deployment)
            self.worst = max(self.worst, len(opened))
            self.serving[deployment], self.existing[deployment] = set(now), set(alive)


def summarize_pending(seconds: Iterable[float]) -> tuple[int, float, float, float]:
    """(pods, sum, p50, p95) of pending seconds, nearest rank; zeros when none."""
    ordered = sorted(seconds)
    if not ordered:
        return 0, 0.0, 0.0, 0.0

    def rank(q: float) -> float:
        return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]

    return len(ordered), sum(ordered), rank(0.5), rank(0.95)
