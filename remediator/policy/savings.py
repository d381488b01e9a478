"""The `savings` section: what a node-hour costs, to price the scale-outs the placement engine avoided
(remediator/model/savings.py), and how many days of the ledger are kept.

    savings:
      currency: USD
      keepDays: 90
      prices:                      # the first entry whose labels the node all carries prices its node-hours
      - match: {node.kubernetes.io/instance-type: m5.xlarge}
        perHour: 0.192
      - match: {karpenter.sh/capacity-type: spot}
        perHour: 0.06

A node no entry matches counts its hours unpriced (shown, never guessed). A price must be a number above 0: a
negative or zero price would report a loss or nothing as a saving, and a missing one is a typo, not a free node.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import yaml

from remediator.policy.reader import Reader, Section, is_null
from remediator.policy.syntax import label_value_problem, qualified_name_problem

_KEYS = ("currency", "keepDays", "prices")
_PRICE_KEYS = ("match", "perHour")
MAX_PRICES = 1_000
MAX_PER_HOUR = 10_000.0  # per node-hour: the largest machines cost tens; above this it is a typo (a monthly price?)
MAX_KEEP_DAYS = 400  # model/savings.py MAX_DAYS


@dataclass(frozen=True)
class Price:
    match: tuple[tuple[str, str], ...]  # node labels, all required
    per_hour: float


@dataclass(frozen=True)
class SavingsSettings:
    currency: str = ""  # printed beside the costs; "" when no prices are given
    keep_days: int = 90
    prices: tuple[Price, ...] = ()

    def price_for(self, labels: Mapping[str, str]) -> float | None:
        """The per-hour price of a node with `labels`: the first entry it matches, else None."""
        for p in self.prices:
            if all(labels.get(k) == v for k, v in p.match):
                return p.per_hour
        return None


def _currency_problem(text: str) -> str | None:
    if not 1 <= len(text) <= 16 or not all(c.isascii() and (c.isalnum() or c in "$€£¥_-") for c in text):
        return "must be 1 to 16 letters, digits or a currency sign (USD, EUR, $)"
    return None


def read_savings(r: Reader, top: Section) -> SavingsSettings:
    m = r.section(top, "savings", _KEYS)
    d = SavingsSettings()
    prices: list[Price] = []
    seen: dict[tuple[tuple[str, str], ...], str] = {}
    items = r.sequence(m, "prices") or []
    if len(items) > MAX_PRICES:
        r.error(m.values["prices"], m.at("prices"), f"at most {MAX_PRICES} entries")
        items = []
    for node, path in items:
        e = r.mapping(node, path, _PRICE_KEYS)
        if e.present and "match" not in e.values:
            r.error(e.where(), e.at("match"), "required: the node labels this price is for")
        match = tuple(sorted(r.string_map(e, "match", qualified_name_problem, label_value_problem)))
        if (given := e.values.get("match")) is not None and (
                is_null(given) or (isinstance(given, yaml.MappingNode) and not given.value)):
            r.error(e.values["match"], e.at("match"), "must name at least one label (an empty match prices every "
                                                        "node: give that entry last, with a label every node has)")
        per_hour = _per_hour(r, e)
        if match and match in seen:
            r.error(e.values["match"], e.at("match"), f"the same labels as {seen[match]}: this entry is never used")
        elif match and per_hour is not None:
            seen[match] = path
            prices.append(Price(match, per_hour))
    currency = r.text(m, "currency", d.currency, check=_currency_problem)
    if prices and not currency and "currency" not in m.values:
        r.error(m.values["prices"], m.at("currency"), "required with prices (USD, EUR, ...): the costs are printed "
                                                      "with it")
    return SavingsSettings(currency=currency, prices=tuple(prices),
                           keep_days=r.integer(m, "keepDays", d.keep_days, minimum=1, maximum=MAX_KEEP_DAYS))


def _per_hour(r: Reader, e: Section) -> float | None:
    node = e.values.get("perHour")
    if node is None:
        if e.present:
            r.error(e.where(), e.at("perHour"), "required: the price of one node-hour")
        return None
    got = r.value(node, e.at("perHour"))
    if isinstance(got, bool) or not isinstance(got, int | float):
        r.wrong(node, e.at("perHour"), "a number (the price of one node-hour)", got)
        return None
    try:
        value = float(got)
    except OverflowError:
        value = math.inf
    if not math.isfinite(value) or not 0 < value <= MAX_PER_HOUR:
        r.error(node, e.at("perHour"), f"must be more than 0 and at most {MAX_PER_HOUR:g}, got {got}")
        return None
    return value
