"""The `savings` section (policy/savings.py): prices matched by node labels, and every bad price refused naming the
file, line and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodemedic_common.config_errors import ConfigError
from remediator.policy.loader import load_policy
from remediator.policy.model import Policy
from remediator.policy.savings import Price, SavingsSettings
from remediator.strategies import CATALOG

HEAD = "apiVersion: nodemedic.io/v1alpha1\nkind: RemediationPolicy\nrules: []\n"


def load(tmp_path: Path, text: str) -> Policy:
    f = tmp_path / "policy.yaml"
    f.write_text(HEAD + text)
    return load_policy(f, catalog=CATALOG)


def test_no_section_prices_nothing() -> None:
    assert SavingsSettings() == SavingsSettings(currency="", keep_days=90, prices=())
    assert SavingsSettings().price_for({"node.kubernetes.io/instance-type": "m5.large"}) is None


def test_the_first_entry_whose_labels_the_node_carries_prices_it(tmp_path: Path) -> None:
    policy = load(tmp_path, """savings:
  currency: USD
  keepDays: 30
  prices:
  - match: {node.kubernetes.io/instance-type: m5.xlarge, karpenter.sh/capacity-type: spot}
    perHour: 0.07
  - match: {node.kubernetes.io/instance-type: m5.xlarge}
    perHour: 0.192
  - {match: {karpenter.sh/nodepool: general}, perHour: 1}
""")
    s = policy.savings
    assert s.currency == "USD" and s.keep_days == 30
    assert s.prices[1] == Price((("node.kubernetes.io/instance-type", "m5.xlarge"),), 0.192)
    assert s.price_for({"node.kubernetes.io/instance-type": "m5.xlarge", "karpenter.sh/capacity-type": "spot"}) == 0.07
    assert s.price_for({"node.kubernetes.io/instance-type": "m5.xlarge"}) == 0.192
    assert s.price_for({"karpenter.sh/nodepool": "general"}) == 1.0
    assert s.price_for({"karpenter.sh/nodepool": "gpu"}) is None


@pytest.mark.parametrize(("text", "error"), [
    ("savings: {currency: USD, prices: [{match: {a: b}, perHour: -0.1}]}",
     "policy.yaml:4: savings.prices[0].perHour: must be more than 0 and at most 10000, got -0.1"),
    ("savings: {currency: USD, prices: [{match: {a: b}, perHour: 0}]}",
     "savings.prices[0].perHour: must be more than 0"),
    ("savings: {currency: USD, prices: [{match: {a: b}}]}",
     "policy.yaml:4: savings.prices[0].perHour: required: the price of one node-hour"),
    ("savings: {currency: USD, prices: [{match: {a: b}, perHour: cheap}]}",
     "savings.prices[0].perHour: must be a number (the price of one node-hour), got string 'cheap'"),
    ("savings: {currency: USD, prices: [{match: {a: b}, perHour: .nan}]}", "savings.prices[0].perHour: must be more"),
    ("savings: {currency: USD, prices: [{match: {a: b}, perHour: 9.0e+999}]}",
     "savings.prices[0].perHour: must be more"),
    ("savings: {currency: USD, prices: [{match: {a: b}, perHour: 20000}]}", "at most 10000, got 20000"),
    ("savings: {currency: USD, prices: [{perHour: 1}]}", "savings.prices[0].match: required"),
    ("savings: {currency: USD, prices: [{match: {}, perHour: 1}]}", "savings.prices[0].match: must name at least one"),
    ("savings: {currency: USD, prices: [{match: {'bad key!': b}, perHour: 1}]}", "savings.prices[0].match.bad key!"),
    ("savings: {currency: USD, prices: [{match: {a: b}, perHour: 1}, {match: {a: b}, perHour: 2}]}",
     "savings.prices[1].match: the same labels as savings.prices[0]: this entry is never used"),
    ("savings: {prices: [{match: {a: b}, perHour: 1}]}", "savings.currency: required with prices"),
    ("savings: {currency: 'US Dollars!'}", "savings.currency: must be 1 to 16 letters"),
    ("savings: {keepDays: 0}", "savings.keepDays: must be at least 1 and at most 400, got 0"),
    ("savings: {prices: {a: 1}}", "savings.prices: must be a list"),
    ("savings: {price: []}", "savings.price: unknown key (did you mean prices?)"),
])
def test_a_bad_price_table_is_refused_naming_the_field(tmp_path: Path, text: str, error: str) -> None:
    with pytest.raises(ConfigError) as e:
        load(tmp_path, text + "\n")
    assert error in str(e.value), str(e.value)
