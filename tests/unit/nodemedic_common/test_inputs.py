"""The bounds on configuration files: size and UTF-8 before parsing, depth and alias expansion before composing,
and what an error message may quote."""

from __future__ import annotations

from pathlib import Path

import yaml
from hypothesis import given
from hypothesis import strategies as st

from nodemedic_common.inputs import (
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_NODES,
    MAX_QUOTED,
    Problem,
    quoted,
    read_text,
    yaml_problem,
)
from tests.unit.fuzz.strategies import FUZZ


def laughs(width: int, levels: int) -> str:
    """A "billion laughs" document: each level a list of `width` aliases of the level below."""
    lines = [f"l0: &a0 [{', '.join(['x'] * width)}]"]
    lines += [f"l{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def expanded_nodes(text: str, limit: int) -> int:
    """Nodes of the composed document with every alias expanded, counted up to `limit` + 1 (the oracle)."""
    count, stack = 0, [yaml.compose(text, Loader=yaml.SafeLoader)]
    while stack and count <= limit:
        node = stack.pop()
        count += 1
        if isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            stack.extend(n for pair in node.value for n in pair)
    return count


def test_a_file_over_the_size_bound_is_refused_without_reading_it_whole(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_bytes(b"#" * (MAX_FILE_BYTES + 1))
    assert read_text(path) == Problem(1, "the file is larger than 4 MiB, the bound on a config file")
    path.write_bytes(b"#" * MAX_FILE_BYTES)
    assert read_text(path) == "#" * MAX_FILE_BYTES


def test_bytes_that_are_not_utf8_are_refused_at_their_line(tmp_path: Path) -> None:
    path = tmp_path / "binary.yaml"
    path.write_bytes(b"a: 1\nb: 2\n\xff\xfe\x00")
    assert read_text(path) == Problem(3, "not UTF-8 text: byte 0xff at offset 10 (invalid start byte)")


def test_nesting_to_the_bound_is_accepted_and_one_more_level_refused_at_its_line() -> None:
    assert yaml_problem("a:\n  " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)) is None
    assert yaml_problem("a:\n  " + "[" * MAX_DEPTH + "]" * MAX_DEPTH) == Problem(
        2, f"nested deeper than {MAX_DEPTH} levels, the bound on a config file")


def test_nesting_far_past_pythons_recursion_limit_is_refused_not_a_recursion_error() -> None:
    problem = yaml_problem("- " * 5000 + "x")
    assert problem is not None and problem.message.startswith("nested deeper than")


@FUZZ
@given(width=st.integers(1, 12), levels=st.integers(1, 8))
def test_aliases_are_refused_exactly_when_their_expansion_exceeds_the_bound(width: int, levels: int) -> None:
    text = laughs(width, levels)
    problem = yaml_problem(text)
    assert (problem is not None) == (expanded_nodes(text, MAX_NODES) > MAX_NODES)
    if problem is not None:
        assert "billion laughs" in problem.message


def test_a_quoted_value_is_bounded_however_large_or_shared_it_is() -> None:
    assert len(quoted("x" * 10_000)) <= MAX_QUOTED
    assert len(quoted(yaml.safe_load(laughs(9, 9))["l8"])) < 10 * MAX_QUOTED
    assert quoted("short") == "'short'"
