"""hack/bench/lib/table.py and the two side-by-side tables built on it, whose layout the README's figures come from."""

from __future__ import annotations

import pytest

from hack.bench.agent_vs_npd_on_node import comparison_table
from hack.bench.lib.comparison import Comparison
from hack.bench.lib.table import Column, table


def test_fitted_columns_are_as_wide_as_their_widest_cell_and_lines_end_without_blanks() -> None:
    columns = (Column(""), Column("nodemedic"), Column("descheduler"), Column("ratio"))
    rows = [("one-shot wall time, median (s)", "2.96  [2.9, 3.1]", "20.10 of 3 complete run(s)", "0.15"),
            ("  evictions planned", "500", "[500]", "")]

    assert table(columns, rows, gap="  ") == [
        "                                nodemedic         descheduler                 ratio",
        "one-shot wall time, median (s)  2.96  [2.9, 3.1]  20.10 of 3 complete run(s)  0.15",
        "  evictions planned             500               [500]",
    ]


def test_fixed_columns_align_as_asked_and_a_long_cell_is_not_cut() -> None:
    columns = (Column("", "<", 6), Column("ours", ">", 6), Column("theirs", ">", 8))
    assert table(columns, [("RSS", "26.1", "9.7"), ("a long label", "1", "2")]) == [
        "        ours  theirs",
        "RSS     26.1     9.7",
        "a long label     1       2",
    ]


def test_a_row_of_another_width_than_the_columns_is_refused() -> None:
    with pytest.raises(ValueError, match="a row of 2 cells in a table of 3 columns"):
        table((Column("a"), Column("b"), Column("c")), [("x", "y")])


def test_the_real_node_table_keeps_its_layout_and_shows_no_ratio_with_a_zero() -> None:
    lines = comparison_table([
        Comparison("RSS (memory.stat total_rss), mean", 26.14, 9.66, "MiB"),
        Comparison("CPU, % of one core (cpuacct.usage delta)", 0.0971, 0.0362, "%"),
        Comparison("CFS periods throttled (cpu.stat)", 0, 9, ""),
        Comparison("API requests in the window (audit log)", 0, 0, ""),
    ])

    # The layout the benchmark printed before its table moved to hack.bench.lib.table: 48, 18, 24 and 14 wide.
    expected = [f"{'':<48}{'nodemedic-agent':>18}{'node-problem-detector':>24}{'agent / NPD':>14}"]
    for label, agent, npd, ratio in [("RSS (memory.stat total_rss), mean", "26.1 MiB", "9.7 MiB", "2.71"),
                                     ("CPU, % of one core (cpuacct.usage delta)", "0.097 %", "0.036 %", "2.68"),
                                     ("CFS periods throttled (cpu.stat)", "0", "9", "-"),
                                     ("API requests in the window (audit log)", "0", "0", "-")]:
        expected.append(f"{label:<48}{agent:>18}{npd:>24}{ratio:>14}")
    assert lines == expected
