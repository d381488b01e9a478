"""hack/bench/lib/comparison.py: ratios of nodemedic's figures to its peer's, as the benchmarks print them."""

from __future__ import annotations

import math

import pytest

from hack.bench.lib.comparison import Comparison, format_ratio, ratio


@pytest.mark.parametrize(("ours", "theirs", "expected"), [
    (1.0, 2.0, 0.5),
    (0.0, 3.0, 0.0),
    (3.0, 0.0, None),
    (0.0, 0.0, None),
    (1.0, math.nan, None),
], ids=["a ratio", "ours zero is a ratio", "theirs zero is none", "both zero is none", "theirs unmeasured is none"])
def test_a_ratio_exists_only_where_the_peer_measured_something(ours: float, theirs: float,
                                                               expected: float | None) -> None:
    assert ratio(ours, theirs) == expected


@pytest.mark.parametrize(("value", "undefined", "expected"), [
    (0.0758, "n/a", "0.08"),
    (1.0, "n/a", "1.00"),
    (15.0 / 0.95, "n/a", "15.79"),
    (None, "n/a", "n/a"),
    (None, "-", "-"),
    (None, "inf", "inf"),
], ids=["two decimals", "one", "above ten", "none", "none as a dash", "none as inf"])
def test_a_ratio_prints_with_two_decimals_or_the_benchmarks_word_for_none(value: float | None, undefined: str,
                                                                          expected: str) -> None:
    assert format_ratio(value, undefined=undefined) == expected


def test_a_comparison_divides_ours_by_theirs() -> None:
    assert Comparison("RSS", 26.1, 9.7, "MiB").ratio == pytest.approx(2.6907, abs=1e-4)
    assert Comparison("API requests", 0, 0, "").ratio is None
