"""hack/bench/lib/stats.py: the median, p95 and extremes every benchmark prints."""

from __future__ import annotations

import math

import pytest

from hack.bench.lib.stats import Summary, median_or_nan, percentile, percentiles_ms, summarize


@pytest.mark.parametrize(("values", "q", "expected"), [
    ([5.0], 0.95, 5.0),
    ([3.0, 1.0, 2.0], 0.0, 1.0),
    ([3.0, 1.0, 2.0], 1.0, 3.0),
    ([float(v) for v in range(1, 21)], 0.95, 19.0),  # index round(0.95 * 19) = 18
    ([float(v) for v in range(30, 0, -1)], 0.95, 29.0),  # unsorted; index round(0.95 * 29) = 28
    ([float(v) for v in range(1, 11)], 0.5, 5.0),  # index round(4.5) = 4: Python rounds half to even
], ids=["one sample", "q 0 is the minimum", "q 1 is the maximum", "p95 of 20", "p95 of 30 unsorted",
        "p50 of 10 rounds half to even"])
def test_a_percentile_is_the_nearest_ranked_sample(values: list[float], q: float, expected: float) -> None:
    assert percentile(values, q) == expected


def test_a_summary_holds_every_figure_of_the_samples() -> None:
    assert summarize([0.3, 0.1, 0.2, 0.4]) == Summary(count=4, mean=pytest.approx(0.25), median=pytest.approx(0.25),
                                                      p95=0.4, minimum=0.1, maximum=0.4)


def test_summarizing_no_samples_is_refused() -> None:
    with pytest.raises(ValueError, match="no samples"):
        summarize([])


def test_the_median_of_nothing_measured_is_nan_not_an_error() -> None:
    assert median_or_nan([2.0, 9.0, 4.0]) == 4.0
    assert math.isnan(median_or_nan([]))


def test_latencies_in_seconds_print_as_whole_milliseconds() -> None:
    latencies = [0.055, 0.0624, 0.0826, 0.0831] + [0.06] * 16
    assert percentiles_ms(summarize(latencies)) == "p50 60 ms, p95 83 ms, max 83 ms"
