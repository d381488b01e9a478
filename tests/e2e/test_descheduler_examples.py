"""descheduler v0.36.0's own example policies, read as they are: each validates (or is refused for a documented reason),
and `convert` writes the very policy it is read as. The examples come from the descheduler module `make build`
downloads; without it this test fails (it never skips)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from kcp import versions
from remediator.policy.loader import PolicyError, convert_policy, parse_policy

pytestmark = pytest.mark.e2e

# example -> the documented reason nodemedic refuses it (docs/deschedule-strategies.md), or None: it must validate
EXPECTED = {
    "failed-pods.yaml": None,
    "high-node-utilization.yml": None,
    "low-node-utilization.yml": None,
    "node-affinity.yml": None,
    "pod-life-time-transition.yml": None,
    "pod-life-time.yml": None,
    "policy.yaml": None,
    "too-many-restarts.yml": None,
    "topology-spread-constraint.yaml": None,
}


def examples() -> Path:
    cache = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=False,
                           env=dict(os.environ, GOFLAGS="-mod=mod")).stdout.strip()
    where = Path(cache) / f"sigs.k8s.io/descheduler@v{versions.DESCHEDULER}" / "examples"
    if not where.is_dir():
        pytest.fail(f"descheduler v{versions.DESCHEDULER}'s examples are not at {where}: run `make build` (it builds "
                    "descheduler from the module proxy); this test never skips", pytrace=False)
    return where


def test_every_example_of_descheduler_is_known_here() -> None:
    assert sorted(p.name for p in examples().iterdir() if p.suffix in (".yaml", ".yml")) == sorted(EXPECTED)


@pytest.mark.parametrize(("name", "refusal"), sorted(EXPECTED.items()), ids=sorted(EXPECTED))
def test_an_example_validates_and_converts_to_the_policy_it_is_read_as(name: str, refusal: str | None) -> None:
    path = examples() / name
    text = path.read_text()
    if refusal is not None:
        with pytest.raises(PolicyError) as e:
            parse_policy(text, source=name)
        assert any(refusal in m for m in e.value.errors), e.value.errors
        return
    policy = parse_policy(text, source=name)
    assert policy.strategies, f"{name} enables no strategy here"
    converted = convert_policy(text, source=name)
    assert parse_policy(converted, source=f"converted-{name}") == policy
    print(f"\n{name}: {', '.join(s.name for s in policy.strategies)}; converted policy identical")


V1ALPHA1 = Path(__file__).resolve().parents[1] / "testdata" / "policies" / "descheduler-v1alpha1"


@pytest.mark.parametrize("name", sorted(p.name for p in V1ALPHA1.iterdir()))
def test_the_v1alpha1_form_of_an_example_reads_as_the_same_policy(name: str) -> None:
    """v1alpha1, as the published guides print it, through descheduler's own migration: the same policy."""
    v1alpha1 = parse_policy((V1ALPHA1 / name).read_text(), source=name)
    assert v1alpha1 == parse_policy((examples() / name).read_text(), source=name)
    assert parse_policy(convert_policy((V1ALPHA1 / name).read_text(), source=name), source=name) == v1alpha1
