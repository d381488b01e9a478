"""`re2`: config patterns compiled by RE2 (NPD's engine): rule patterns anchored at the text's end as a whole
(`A|B` anchors both), what RE2 refuses refused with its reason, groups kept only for plain patterns, a catastrophic
backtracking pattern matched in linear time, the matched-line bound, and whether a pattern can match a newline."""

from __future__ import annotations

import time

import pytest

from agent.npd.re2 import MAX_MATCHED_LINE, bounded, compile_plain_pattern, compile_rule_pattern, may_match_newline


def test_a_rule_pattern_matches_only_at_the_end_of_the_text() -> None:
    regex, spans = compile_rule_pattern("task .* blocked")
    assert regex.search("INFO: task kworker blocked") is not None
    assert regex.search("task kworker blocked for more than 120 seconds") is None
    assert spans is False


def test_every_alternative_of_a_rule_pattern_is_anchored_at_the_end() -> None:
    regex, _ = compile_rule_pattern("Out of memory|oom-kill")
    assert regex.search("Out of memory: Killed process 1") is None  # NPD's own `A|B\z` would match this
    assert regex.search("kernel: Out of memory") is not None
    assert regex.search("invoked oom-kill") is not None


def test_a_pattern_refused_as_written_is_refused_even_if_wrapping_would_make_it_valid() -> None:
    with pytest.raises(ValueError, match=r"RE2 syntax, as in node-problem-detector"):
        compile_rule_pattern("a)|(b")


@pytest.mark.parametrize("pattern", [r"(a)\1", r"foo(?=bar)", r"(?<!x)y"])
def test_backreferences_and_lookaround_are_refused_with_re2s_reason(pattern: str) -> None:
    with pytest.raises(ValueError, match=r"\(RE2 syntax, as in node-problem-detector\)$") as caught:
        compile_rule_pattern(pattern)
    assert str(caught.value) != "refused (RE2 syntax, as in node-problem-detector)"


def test_a_rule_pattern_captures_nothing_but_a_plain_pattern_keeps_its_groups() -> None:
    rule, _ = compile_rule_pattern("(a)(b)")
    assert rule.search("ab") is not None
    plain = compile_plain_pattern(r"^(\w+) (\d+)")
    assert plain.groups == 2
    match = plain.search("kernel 42 rest")
    assert match is not None and match.group(1) == "kernel" and match.group(2) == "42"


def test_digit_and_word_classes_are_ascii_as_in_go() -> None:
    plain = compile_plain_pattern(r"^\d+$")
    assert plain.search("١٢٣") is None  # Arabic-Indic digits: \d in Python's re, not in RE2
    assert plain.search("123") is not None


def test_a_catastrophic_backtracking_pattern_matches_in_linear_time() -> None:
    regex, _ = compile_rule_pattern("(a+)+b")
    started = time.monotonic()
    assert regex.search("a" * 5000 + "c") is None
    assert time.monotonic() - started < 0.5


def test_bounded_keeps_a_short_line_and_cuts_a_long_one_at_the_matched_line_limit() -> None:
    short = "x" * MAX_MATCHED_LINE
    assert bounded(short) is short
    assert bounded("y" * (MAX_MATCHED_LINE + 5)) == "y" * MAX_MATCHED_LINE


@pytest.mark.parametrize(("pattern", "expected"), [
    ("task .* blocked", False),              # "." does not match a newline
    (r"line one\nline two", True),
    (r"\s+", True),                          # \s includes \n
    (r"[^a]", True),                         # a negated class does
    (r"[a-z\]]+", False),
    (r"[]a]", False),                        # a leading ] is a literal
    (r"[[:space:]]", True),
    (r"[[:alpha:]]", False),
    (r"\x0a", True),
    (r"\x{000A}", True),
    (r"\012", True),
    (r"\Q\n\E", False),                      # quoted: a backslash and an n
    (r"\pL+", False),
    (r"\b\z$", False),                       # zero-width anchors consume nothing
    (r"(?s:a.b)", True),                     # a flag group turning on s
    (r"(?i)abc", False),
    (r"(?-s:a.b)", False),                   # s turned off
    (r"(?P<name>\w+)", False),
    ("literal\nnewline", True),
])
def test_may_match_newline_says_whether_any_piece_can_consume_a_newline(pattern: str, expected: bool) -> None:
    assert may_match_newline(pattern) is expected


def test_a_rule_whose_pattern_can_span_lines_says_so() -> None:
    _, spans = compile_rule_pattern(r"Out of memory\n.*Killed")
    assert spans is True
