"""The workload figures the stream benchmark (hack/bench/stream.py) draws its Deployments from, taken from a public
cluster trace, and the few pure functions that sample them. No raw trace is kept here: only the derived numbers.

Source: Alibaba's GPU-cluster trace v2023 (Weng et al., "Beware of Fragmentation", USENIX ATC '23), file
`cluster-trace-gpu-v2023/csv/openb_pod_list_default.csv` (8,152 pods, Kubernetes units: cpu_milli, memory_mib, with
creation/deletion times in seconds), README https://github.com/alibaba/clusterdata/blob/master/cluster-trace-gpu-v2023/README.md
(the CSV: https://github.com/alibaba/clusterdata/blob/master/cluster-trace-gpu-v2023/csv/openb_pod_list_default.csv).

How each figure was computed (a throw-away script over a local copy of the file, kept out of the repository):
* Rows read: all 8,152 (pods 0000-8151, creation times 0 to 12,901,761 s; the copy was checked: a header and 8,152
  rows of its 11 fields, the names in sequence, 575,468 characters as stored). SAMPLE_ROWS says so in the output.
* CPU-only pods: num_gpu == 0: 1,088 (13.3 %). Only they are drawn from: the GPU pods' cpu and memory sit beside GPUs
  a kwok node does not have.
* SHAPES: the distinct (cpu_milli, memory_mib) of the CPU-only pods with their counts (25 shapes). The 17 shapes seen
  at least twice cover 1,080 pods (99.3 %); the 8 seen once are dropped and the shares are of the 1,080.
* LIFETIME_QUANTILES: deletion_time - creation_time of the CPU-only pods that ran (phase not Pending: 36 never ran)
  and ended before the trace did (deletion_time 12,902,960 is the trace's end: 2 were cut there): 1,050 lifetimes,
  nearest-rank quantiles (the value at index round(q * (n - 1)) of the sorted lifetimes). The top 1 % is cut at q0.99
  (one pod lived 15 days; a one-day stream cannot tell that from one day).
* REPLICAS: consecutive CPU-only pods (in creation order) of one shape, each created less than 600 s after the one
  before (a burst), are counted as one workload; the burst sizes of the 627 bursts found, 1 to 7 pods.
* HOURLY_ARRIVALS: CPU-only creations per hour of (creation_time mod 86,400 s). The trace's times are relative (time
  0 is not midnight), so hour 0 here is the trace's, not a wall-clock hour: the cycle's shape is the trace's, its
  phase is not known.
* Arrival rate: 1,086 CPU-only pods in the 808 h of steady arrivals (pod 0048 at 9,992,086 s to the last creation;
  the 48 pods before are spread over 116 days): 1.3 an hour (10.0 an hour for all pods). Far too few to fill a pool
  of nodes, so the stream does not use it: the number of Deployments is the benchmark's `--deployments`.

Scaling, stated once (SCALE and LIFETIME_STRETCH, printed by the benchmark):
* The trace's CPU-only pods ask 8-32 cores and 8-64 GiB, on nodes of 32-128 cores; a kwok node here is 4 CPUs and
  16 GiB (Karpenter's kwok instance type s-4x-amd64-linux). Each pod's cpu and memory are divided by SCALE = 16 (the
  same factor for both: every pod keeps its cpu:memory ratio): the largest (32 cores) becomes 2000m, half a node, as
  a 32-core pod is a quarter to a third of the trace's nodes.
* The trace's pods are short tasks (median 9 min); a Deployment outlives its pods. Lifetimes are multiplied by
  LIFETIME_STRETCH = 20 (median 2.9 h, the shortest tenth 0.8 h), so that at `--hour-seconds 20` the shortest-lived
  tenth still outlive a kwok node's launch by Karpenter (about 10 s).
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Sequence
from dataclasses import dataclass

SOURCE = "https://github.com/alibaba/clusterdata/blob/master/cluster-trace-gpu-v2023/README.md"
TRACE_FILE = "cluster-trace-gpu-v2023/csv/openb_pod_list_default.csv"
SAMPLE_ROWS = "all 8,152 rows (pods 0000-8151); 1,088 CPU-only"
SCALE = 16  # cpu and memory of every trace shape are divided by this
LIFETIME_STRETCH = 20  # trace lifetimes (seconds) are multiplied by this


@dataclass(frozen=True)
class Shape:
    cpu_milli: int  # as in the trace
    memory_mib: int  # as in the trace
    count: int  # CPU-only pods of this shape in the file

    def scaled(self) -> tuple[int, int]:
        """(millicores, MiB) after SCALE, rounded."""
        return round(self.cpu_milli / SCALE), round(self.memory_mib / SCALE)


# The 17 shapes seen at least twice among the 1,088 CPU-only pods, most common first (ties in the file's order).
SHAPES: tuple[Shape, ...] = (
    Shape(12500, 57344, 364),
    Shape(32000, 49152, 284),
    Shape(8000, 30517, 163),
    Shape(15400, 51200, 120),
    Shape(16500, 51200, 95),
    Shape(11400, 57344, 11),
    Shape(8000, 15625, 11),
    Shape(16000, 31250, 8),
    Shape(8000, 31250, 5),
    Shape(12000, 24576, 4),
    Shape(32000, 62500, 3),
    Shape(20000, 65536, 2),
    Shape(12500, 65536, 2),
    Shape(8000, 16384, 2),
    Shape(32000, 32768, 2),
    Shape(8000, 8192, 2),
    Shape(16000, 32768, 2),
)

# (quantile, seconds) of 1,050 completed CPU-only pods' lifetimes (deletion - creation), nearest rank.
LIFETIME_QUANTILES: tuple[tuple[float, float], ...] = (
    (0.0, 34.0),
    (0.10, 146.0),
    (0.25, 155.0),
    (0.50, 513.0),
    (0.75, 1950.0),
    (0.90, 12933.0),
    (0.95, 19473.0),
    (0.99, 27721.0),
    (1.0, 27721.0),  # the top 1 % cut at q0.99
)

# Burst sizes (consecutive pods of one shape created < 600 s apart) -> how many of the 627 bursts had that size.
REPLICAS: tuple[tuple[int, int], ...] = ((1, 377), (2, 125), (3, 72), (4, 33), (5, 11), (6, 5), (7, 4))

# CPU-only creations per hour of the trace's (relative) day, hours 0..23.
HOURLY_ARRIVALS: tuple[int, ...] = (
    80, 80, 66, 44, 47, 26, 31, 57, 28, 14, 16, 12, 11, 24, 17, 105, 29, 55, 54, 48, 22, 62, 72, 88,
)


def smoothed_profile(counts: Sequence[int] = HOURLY_ARRIVALS) -> list[float]:
    """The hourly counts averaged over 3 hours (circular: the day wraps), which evens the noise of 1,088 arrivals."""
    n = len(counts)
    return [(counts[(h - 1) % n] + counts[h] + counts[(h + 1) % n]) / 3 for h in range(n)]


def demand_factor(hour: int, *, low: float = 0.5, high: float = 1.5) -> float:
    """How busy the trace's hour `hour` (mod 24) is against its daily mean, within [low, high]: what a Deployment's
    replicas are multiplied by at that hour (the daily cycle)."""
    profile = smoothed_profile()
    mean = sum(profile) / len(profile)
    return min(high, max(low, profile[hour % len(profile)] / mean))


def draw_shape(rng: random.Random) -> Shape:
    return rng.choices(SHAPES, weights=[s.count for s in SHAPES])[0]


def draw_replicas(rng: random.Random) -> int:
    return rng.choices([r for r, _ in REPLICAS], weights=[n for _, n in REPLICAS])[0]


def lifetime_seconds(u: float, quantiles: Sequence[tuple[float, float]] = LIFETIME_QUANTILES) -> float:
    """The trace lifetime at quantile `u` (0..1), interpolated between the tabled quantiles geometrically (lifetimes
    span three orders of magnitude: a straight line between 513 s and 1,950 s would put most in the upper end)."""
    if not 0.0 <= u <= 1.0:
        raise ValueError(f"a quantile is within 0..1, got {u}")
    qs = [q for q, _ in quantiles]
    i = min(max(bisect.bisect_right(qs, u), 1), len(qs) - 1)
    (q0, s0), (q1, s1) = quantiles[i - 1], quantiles[i]
    if q1 == q0:
        return s1
    return float(s0 * (s1 / s0) ** ((u - q0) / (q1 - q0)))


def draw_lifetime_hours(rng: random.Random) -> float:
    """A Deployment's lifetime in simulated hours: a trace lifetime times LIFETIME_STRETCH."""
    return lifetime_seconds(rng.random()) * LIFETIME_STRETCH / 3600


def draw_hour(rng: random.Random, hours: int, *, start: int = 0) -> float:
    """An arrival time in [0, hours): an hour weighted by the trace's (smoothed) arrivals in it, then uniform within.
    The stream's hour 0 is the trace's hour `start`."""
    profile = smoothed_profile()
    weights = [profile[(h + start) % len(profile)] for h in range(hours)]
    hour = rng.choices(range(hours), weights=weights)[0]
    return hour + rng.random()


def describe() -> list[str]:
    """The figures as the benchmark prints them."""
    total = sum(s.count for s in SHAPES)
    shapes = ", ".join(f"{s.cpu_milli // 1000 if s.cpu_milli % 1000 == 0 else s.cpu_milli / 1000:g} CPU/"
                       f"{s.memory_mib / 1024:.0f} GiB {100 * s.count / total:.0f}%" for s in SHAPES)
    life = ", ".join(f"q{q:g} {s / 60:.0f} min" for q, s in LIFETIME_QUANTILES if q in (0.1, 0.5, 0.9, 0.99))
    replicas = ", ".join(f"{r}: {n}" for r, n in REPLICAS)
    return [
        f"trace: Alibaba GPU-cluster trace v2023, {TRACE_FILE} ({SOURCE}); rows read: {SAMPLE_ROWS}",
        f"  CPU-only pod shapes (trace units, share of {total}): {shapes}",
        f"  scaled by 1/{SCALE} (cpu and memory alike) onto 4-CPU / 16 GiB kwok nodes (s-4x-amd64-linux)",
        f"  lifetimes (completed pods): {life}; stretched x{LIFETIME_STRETCH} into Deployment lifetimes",
        f"  replicas = burst sizes (consecutive pods of one shape < 600 s apart), count of bursts: {replicas}",
        f"  daily cycle = CPU-only creations per hour of the trace's relative day: {list(HOURLY_ARRIVALS)}"
        " (3-hour mean; replicas x that hour's share of the mean, within 0.5..1.5)",
    ]
