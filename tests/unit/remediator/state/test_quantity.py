"""`quantity`: Kubernetes quantities parsed exactly (decimal and binary suffixes, exponents, signs, numbers as
numbers), refused as Kubernetes refuses them (unknown suffix, bool, out of int64, inf/nan), turned into integers
(cpu in millicores, everything rounded up), and ResourceLists read skipping what does not parse."""

from __future__ import annotations

from decimal import Decimal

import pytest

from remediator.state.quantity import parse_quantity, resources, to_int


@pytest.mark.parametrize(("text", "expected"), [
    ("100m", Decimal("0.1")), ("64Mi", Decimal(64 * 2**20)), ("1.5", Decimal("1.5")), ("2e3", Decimal(2000)),
    ("1k", Decimal(1000)), ("1Ki", Decimal(1024)), ("3Gi", Decimal(3 * 2**30)), ("1E", Decimal(10**18)),
    ("5n", Decimal("5e-9")), ("+7", Decimal(7)), ("-1", Decimal(-1)), (" 2G ", Decimal(2 * 10**9)),
    ("1.5E3", Decimal(1500)), ("1e-3", Decimal("0.001")), (".5", Decimal("0.5")),
    (3, Decimal(3)), (0.25, Decimal("0.25")),
])
def test_a_quantity_is_parsed_exactly_in_base_units(text: str | int | float, expected: Decimal) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize("text", ["", "abc", "1x", "1KB", "1 Mi", "1..2", "Mi", "1e", "--1"])
def test_text_that_is_not_a_quantity_is_refused_naming_it(text: str) -> None:
    with pytest.raises(ValueError, match=r"^not a quantity: "):
        parse_quantity(text)


def test_a_boolean_is_not_a_quantity_though_bool_is_an_int() -> None:
    with pytest.raises(ValueError, match=r"not a quantity: True"):
        parse_quantity(True)


@pytest.mark.parametrize("value", ["1e999999999Ei", "9223372036854775808", "8Ei", "-8Ei", float("inf"),
                                   float("nan"), 2**63])
def test_a_quantity_beyond_int64_or_not_finite_is_refused(value: str | int | float) -> None:
    with pytest.raises(ValueError, match="not a quantity"):
        parse_quantity(value)


def test_the_largest_int64_is_accepted() -> None:
    assert parse_quantity(str(2**63 - 1)) == Decimal(2**63 - 1)


@pytest.mark.parametrize(("resource", "value", "expected"), [
    ("cpu", "100m", 100), ("cpu", "1.5", 1500), ("cpu", 2, 2000), ("cpu", "1u", 1), ("cpu", "0.0001", 1),
    ("memory", "64Mi", 64 * 2**20), ("memory", "1.5k", 1500), ("memory", "100m", 1), ("pods", "110", 110),
    ("nvidia.com/gpu", "1", 1), ("cpu", "-100m", -100), ("memory", "-1.5", -1),
])
def test_to_int_gives_millicores_for_cpu_and_base_units_rounded_up_otherwise(
        resource: str, value: str | int | float, expected: int) -> None:
    assert to_int(resource, value) == expected


def test_resources_reads_a_resource_list_and_skips_what_does_not_parse() -> None:
    raw: dict[str, object] = {"cpu": "250m", "memory": "1Gi", "pods": 110, "bad": "lots", "weird": ["1"],
                              "flag": True, "huge": "9Ei"}
    assert resources(raw) == {"cpu": 250, "memory": 2**30, "pods": 110}


def test_resources_of_nothing_is_empty() -> None:
    assert resources(None) == {}
    assert resources({}) == {}
