"""hack/test.py: the end of a `make test` log says which tests failed and why, from the lanes' JUnit files."""

from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import escape

import pytest

from hack.test import WHY_LINES, Suite, print_failures, read_junit, why

REPORT = """tmp_path = PosixPath('/tmp/x')

    def test_it() -> None:
>       assert most <= 20
E       assert (21.0 <= 20)

tests/e2e/test_chaos_flapping.py:232: AssertionError"""


def test_a_failed_case_is_counted_and_its_reason_printed_at_the_end(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    junit = tmp_path / "lane.xml"
    junit.write_text(f"""<testsuites><testsuite>
<testcase classname="tests.e2e.test_chaos_flapping" name="test_it" time="1.5">
<failure message="m">{escape(REPORT)}</failure></testcase>
<testcase classname="tests.unit.test_x" name="test_ok" time="0.1"/>
<testcase classname="tests.unit.test_x" name="test_setup" time="0.1"><error message="e">boom</error></testcase>
</testsuite></testsuites>""")
    suites = {"unit": Suite(), "e2e": Suite()}
    read_junit(junit, suites)
    assert (suites["e2e"].failed, suites["unit"].passed, suites["unit"].failed) == (1, 1, 1)
    print_failures(suites)
    assert capsys.readouterr().out.splitlines() == [
        "failed: tests.unit.test_x::test_setup",
        "    boom",
        "failed: tests.e2e.test_chaos_flapping::test_it",
        "    E       assert (21.0 <= 20)",
        "    tests/e2e/test_chaos_flapping.py:232: AssertionError",
        "",
    ]


def test_a_long_report_is_cut_to_its_first_and_last_lines_and_each_line_to_a_width() -> None:
    lines = why("\n".join(f"E   line {i} " + "x" * 1000 for i in range(100)))
    assert len(lines) == WHY_LINES + 1 and all(len(x) <= 300 for x in lines)
    assert lines[0].startswith("E   line 0 ") and lines[WHY_LINES // 2] == f"... {100 - WHY_LINES} lines ..."
    assert lines[-1].startswith("E   line 99 ")
