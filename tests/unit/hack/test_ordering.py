"""The running order of the suite (tests/ordering.py): longest unit of work first, from the last recorded times."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from tests import ordering


class Item:
    """What ordering reads of a pytest item: its node id and its xdist_group marker."""

    def __init__(self, nodeid: str, group: str | None = None) -> None:
        self.nodeid = nodeid
        self.group = group

    def get_closest_marker(self, name: str) -> SimpleNamespace | None:  # a pytest.Mark as far as ordering reads it
        return SimpleNamespace(args=(self.group,), kwargs={}) if name == "xdist_group" and self.group else None


def test_a_node_id_maps_to_the_name_junit_records() -> None:
    assert ordering.key("tests/e2e/test_chaos_leader.py::test_a[x-1]") == "tests.e2e.test_chaos_leader::test_a[x-1]"
    assert ordering.key("tests/unit/a/test_b.py::TestC::test_d") == "tests.unit.a.test_b.TestC::test_d"


def test_units_of_work_run_longest_first_and_a_group_stays_together_in_its_order() -> None:
    items = [Item("tests/unit/test_a.py::test_fast"), Item("tests/e2e/test_k.py::test_1", "k"),
             Item("tests/unit/test_a.py::test_slow"), Item("tests/e2e/test_k.py::test_2", "k"),
             Item("tests/unit/test_a.py::test_new")]
    known = {"tests.unit.test_a::test_fast": 1.0, "tests.unit.test_a::test_slow": 50.0,
             "tests.e2e.test_k::test_1": 30.0, "tests.e2e.test_k::test_2": 40.0}
    ordering.longest_first(items, known)  # type: ignore[arg-type]
    assert [i.nodeid.rsplit("::", 1)[1] for i in items] == ["test_1", "test_2", "test_slow", "test_fast", "test_new"]


def test_without_a_record_the_collection_order_stays() -> None:
    items = [Item("tests/unit/test_a.py::test_b"), Item("tests/unit/test_a.py::test_a")]
    ordering.longest_first(items, {})  # type: ignore[arg-type]
    assert [i.nodeid for i in items] == ["tests/unit/test_a.py::test_b", "tests/unit/test_a.py::test_a"]


def test_a_report_merges_into_the_record_and_a_broken_record_reads_as_none(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NODEMEDIC_CACHE", str(tmp_path))
    report = tmp_path / "r.xml"
    report.write_text('<testsuites><testsuite><testcase classname="tests.unit.test_a" name="test_b" time="2.5"/>'
                      '</testsuite></testsuites>')
    ordering.record_path().write_text('{"tests.unit.test_a::test_old": 7}')
    ordering.record([report, tmp_path / "missing.xml"])
    assert ordering.load() == {"tests.unit.test_a::test_b": 2.5, "tests.unit.test_a::test_old": 7.0}
    ordering.record_path().write_text("not json")
    assert ordering.load() == {}


def test_a_grouped_tests_time_is_recorded_under_the_name_the_collection_knows(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NODEMEDIC_CACHE", str(tmp_path))
    report = tmp_path / "r.xml"
    report.write_text('<testsuites><testsuite><testcase classname="tests.e2e.test_real_node" '
                      'name="test_chain[a-1]@real_node" time="36.3"/></testsuite></testsuites>')
    ordering.record([report])
    assert ordering.load() == {"tests.e2e.test_real_node::test_chain[a-1]": 36.3}
    assert ordering.key("tests/e2e/test_real_node.py::test_chain[a-1]") in ordering.load()
