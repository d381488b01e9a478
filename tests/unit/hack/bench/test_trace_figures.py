"""The trace figures and their sampling: quantiles interpolated, draws within the tables, the cycle's bounds."""

from __future__ import annotations

import random

import pytest

from hack.bench.lib import trace_figures as tf


def test_a_tabled_quantile_gives_its_own_lifetime() -> None:
    for q, seconds in tf.LIFETIME_QUANTILES:
        assert tf.lifetime_seconds(q) == pytest.approx(seconds)


def test_lifetimes_between_quantiles_are_interpolated_geometrically() -> None:
    (q0, s0), (q1, s1) = tf.LIFETIME_QUANTILES[3], tf.LIFETIME_QUANTILES[4]  # q0.5 513 s, q0.75 1950 s
    assert tf.lifetime_seconds((q0 + q1) / 2) == pytest.approx((s0 * s1) ** 0.5)


@pytest.mark.parametrize("u", [-0.1, 1.1])
def test_a_quantile_outside_zero_to_one_is_refused(u: float) -> None:
    with pytest.raises(ValueError, match=r"within 0\.\.1"):
        tf.lifetime_seconds(u)


def test_draws_stay_within_the_tables() -> None:
    rng = random.Random(1)
    replicas = {r for r, _ in tf.REPLICAS}
    for _ in range(500):
        assert tf.draw_shape(rng) in tf.SHAPES
        assert tf.draw_replicas(rng) in replicas
        hours = tf.draw_lifetime_hours(rng)
        assert tf.LIFETIME_QUANTILES[0][1] * tf.LIFETIME_STRETCH / 3600 <= hours
        assert hours <= tf.LIFETIME_QUANTILES[-1][1] * tf.LIFETIME_STRETCH / 3600
        assert 0 <= tf.draw_hour(rng, 5, start=9) < 5


def test_the_most_common_shape_is_drawn_most_often() -> None:
    rng = random.Random(2)
    drawn = [tf.draw_shape(rng) for _ in range(2000)]
    assert max(tf.SHAPES, key=drawn.count) == tf.SHAPES[0]


def test_the_smoothed_profile_keeps_the_days_arrivals_and_wraps_around() -> None:
    profile = tf.smoothed_profile()
    assert sum(profile) == pytest.approx(sum(tf.HOURLY_ARRIVALS))
    assert profile[0] == pytest.approx((tf.HOURLY_ARRIVALS[23] + tf.HOURLY_ARRIVALS[0] + tf.HOURLY_ARRIVALS[1]) / 3)


def test_the_demand_factor_stays_within_its_bounds() -> None:
    factors = [tf.demand_factor(h) for h in range(48)]
    assert min(factors) == 0.5 and max(factors) == 1.5
    assert factors[:24] == factors[24:]


def test_the_shapes_shares_and_the_description_name_the_source() -> None:
    assert sum(s.count for s in tf.SHAPES) == 1080
    assert sum(n for _, n in tf.REPLICAS) == 627
    assert sum(r * n for r, n in tf.REPLICAS) == sum(tf.HOURLY_ARRIVALS) == 1088
    text = "\n".join(tf.describe())
    assert tf.SOURCE in text and f"1/{tf.SCALE}" in text and f"x{tf.LIFETIME_STRETCH}" in text
