"""Hypothesis settings and input strategies shared by the fuzz tests.

Random bytes rarely get past a parser's first check, so most inputs here are *mutants* of real documents (the shipped
configs, the test fixtures): a value replaced by one of another type or by a boundary value, a key dropped or added,
a list item repeated. That reaches the validation and the code behind it, where the crashes are.

Every fuzz test runs `FUZZ`: 10,000 examples by default (the issue's floor; about a minute for all of them),
`NODEMEDIC_FUZZ_EXAMPLES=200` for a quick local run. No example database is written, and the examples are
derived from each test's name (derandomize): every run, in CI or here, tries the same inputs, so a failure seen
once is seen again. To explore new inputs, NODEMEDIC_FUZZ_RANDOM=1 draws them at random (pytest prints the seed;
`--hypothesis-seed=<n>` repeats that run).
"""

from __future__ import annotations

import copy
import os
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

FUZZ = settings(max_examples=int(os.environ.get("NODEMEDIC_FUZZ_EXAMPLES", "10000")), deadline=None,
                database=None, print_blob=True, derandomize=not os.environ.get("NODEMEDIC_FUZZ_RANDOM"),
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# Values at the edges of what configs and API objects carry: zero, negative, huge, fractional, non-finite, and
# strings that look like durations, quantities, percentages or times.
EDGE_STRINGS = ["", " ", "0", "-1", "1", "0s", "-1s", "1ms", "1ns", "9999999999h", "1e400", "1e-400", "nan", "inf",
                "-inf", "100%", "110", "100m", "1Gi", "2e3", "0.5", "1.5Gi", "1h30m", "P1D", "True", "true", "null",
                "NoSchedule", "NoExecute", "Exists", "In", "Gt", "Lt", "a=b", "a/b", "\x00", "\u2028", "é", "\\x7f",
                "2026-01-01T00:00:00Z", "2026-01-01T00:00:00", "9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z"]
EDGE_NUMBERS: list[Any] = [0, 1, -1, 2, 100, 101, 2**31, 2**63, 2**64, -(2**63) - 1, 10**30, 0.5, -0.5, 1e-9, 1e308,
                           float("inf"), float("-inf"), float("nan"), True, False]

scalars = st.one_of(
    st.sampled_from(EDGE_STRINGS), st.sampled_from(EDGE_NUMBERS), st.none(),
    st.integers(), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20),
)
json_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.one_of(st.sampled_from(EDGE_STRINGS), st.text(max_size=8)),
                                                 inner, max_size=4)), max_leaves=12)


def _paths(node: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON-like tree, the root included, as the keys and indexes leading to it."""
    out = [here]
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, (*here, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            out += _paths(value, (*here, index))
    return out


@st.composite
def mutated(draw: st.DrawFn, seed: Any) -> Any:
    """`seed` with one to four changes at random places: a value replaced by any JSON value or by an edge value, a
    key or item dropped, an item repeated or an unknown key added, a string spliced with other text. Few draws per
    example (the places are indexes into the seed's list of places), so that 10,000 examples stay cheap."""
    doc = copy.deepcopy(seed)
    places = _paths(seed)
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(places))
        parent, key = None, None
        node = doc
        try:
            for step in path:
                if not isinstance(node, dict | list):
                    raise TypeError(step)
                parent, key, node = node, step, node[step]
        except (KeyError, IndexError, TypeError):
            continue  # an earlier change removed this place
        kind = draw(st.integers(0, 4))
        if kind == 0:
            new = draw(json_values)
        elif kind == 1:
            new = draw(scalars)
        elif kind == 2 and parent is not None:
            del parent[key]
            continue
        elif kind == 3 and isinstance(node, list) and node:
            node.append(copy.deepcopy(node[draw(st.integers(0, len(node) - 1))]))
            continue
        elif kind == 3 and isinstance(node, dict):
            node[draw(st.one_of(st.sampled_from(EDGE_STRINGS), st.text(max_size=8)))] = draw(json_values)
            continue
        elif isinstance(node, str):
            at = draw(st.integers(0, len(node)))
            new = node[:at] + draw(st.one_of(st.sampled_from(EDGE_STRINGS), st.text(max_size=8))) + node[at:]
        else:
            new = draw(scalars)
        if parent is None:
            doc = new
        else:
            parent[key] = new
    return doc
