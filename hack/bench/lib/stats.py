"""Summaries of a benchmark's samples: the figures every benchmark prints (median, nearest-rank p95, extremes)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Summary:
    """Samples in one unit (seconds, bytes...), summarized."""

    count: int
    mean: float
    median: float
    p95: float
    minimum: float
    maximum: float


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank `q` quantile (0..1) of `values`: always one of the samples, as the README's p95s are."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def summarize(values: Sequence[float]) -> Summary:
    if not values:
        raise ValueError("no samples to summarize")
    return Summary(count=len(values), mean=statistics.mean(values), median=statistics.median(values),
                   p95=percentile(values, 0.95), minimum=min(values), maximum=max(values))


def median_or_nan(values: Sequence[float]) -> float:
    """The median, or NaN when nothing was measured: a long run still prints its other figures."""
    return statistics.median(values) if values else math.nan


def percentiles_ms(seconds: Summary) -> str:
    """`p50 55 ms, p95 82 ms, max 83 ms`: how the latency benchmarks print samples taken in seconds."""
    return f"p50 {seconds.median * 1000:.0f} ms, p95 {seconds.p95 * 1000:.0f} ms, max {seconds.maximum * 1000:.0f} ms"
