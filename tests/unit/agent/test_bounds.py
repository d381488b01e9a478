"""A setting's bounds declared on its field: each kind of bound, the key the user wrote, nested and related fields."""

from __future__ import annotations

import datetime as dt
import posixpath
from dataclasses import dataclass, field

import pytest

from agent.bounds import (
    AT_LEAST_ONE,
    PERCENT,
    PORT,
    POSITIVE,
    ZERO,
    Bounds,
    FieldProblem,
    absolute_path,
    bounded,
    field_problems,
    normal_absolute_path,
    text_form,
)
from agent.model import CheckTiming

SECOND = dt.timedelta(seconds=1)


@dataclass(frozen=True)
class Limits:
    max_percent: float = bounded(50.0, PERCENT)


@dataclass(frozen=True)
class Settings:
    timing: CheckTiming = field(default_factory=CheckTiming)
    count: int = bounded(3, AT_LEAST_ONE)
    port: int = bounded(53, PORT)
    quiet_period: dt.timedelta = bounded(dt.timedelta(minutes=1), POSITIVE)
    window: dt.timedelta = bounded(dt.timedelta(minutes=5), Bounds(at_least=ZERO))
    floor: dt.timedelta = bounded(2 * SECOND, Bounds(at_least=SECOND, why="once a second is enough"))
    share: float = bounded(5.0, Bounds(at_least=0, below=100))
    source: str = bounded("proc", Bounds(choices=("proc", "systemd")))
    mounts: tuple[str, ...] = bounded(("/",), Bounds(not_empty=True, form=absolute_path,
                                                     distinct_by=posixpath.normpath))
    watched: tuple[str, ...] = bounded((), Bounds(within="mounts"))
    device: str = bounded("/dev/kmsg", Bounds(form=normal_absolute_path))
    glob: str = bounded("eth*", Bounds(form=text_form("an interface glob", lambda text: "/" not in text)))
    request_timeout: dt.timedelta = bounded(SECOND, Bounds(above=ZERO, shorter_than="timing.timeout"))
    absent_every: dt.timedelta = bounded(dt.timedelta(minutes=5), Bounds(not_shorter_than="timing.interval"))
    limits: Limits = field(default_factory=Limits)
    plain: str = "anything"  # no bounds: never a problem


def problems(config: object) -> list[str]:
    return [str(problem) for problem in field_problems(config)]


def test_the_defaults_are_within_their_bounds() -> None:
    assert field_problems(Settings()) == []


@pytest.mark.parametrize(("config", "expected"), [
    pytest.param(Settings(count=0), "count: must be at least 1, got 0", id="at-least"),
    pytest.param(Settings(port=65536), "port: must be at least 1 and at most 65535, got 65536", id="range"),
    pytest.param(Settings(quiet_period=ZERO), "quietPeriod: must be positive, got 0s", id="positive-duration"),
    pytest.param(Settings(window=-SECOND), "window: must not be negative, got -1s", id="not-negative"),
    pytest.param(Settings(floor=SECOND / 2), "floor: must be at least 1s (once a second is enough), got 500ms",
                 id="floor-with-its-reason"),
    pytest.param(Settings(share=100), "share: must be at least 0 and below 100, got 100", id="below"),
    pytest.param(Settings(limits=Limits(max_percent=float("nan"))),
                 "limits.maxPercent: must be above 0 and at most 100, got nan", id="nan-in-a-nested-config"),
    pytest.param(Settings(limits=Limits(max_percent=100.5)),
                 "limits.maxPercent: must be above 0 and at most 100, got 100.5", id="fraction-shown-as-given"),
    pytest.param(Settings(source="journal"), "source: must be one of proc, systemd, got 'journal'", id="choices"),
    pytest.param(Settings(mounts=()), "mounts: must not be empty", id="not-empty"),
    pytest.param(Settings(mounts=("/", "data")), "mounts[1]: must be an absolute path, got 'data'", id="each-item"),
    pytest.param(Settings(mounts=("/data", "/data/")), "mounts[1]: '/data/' is listed twice, as mounts[0] too",
                 id="distinct-by-a-key"),
    pytest.param(Settings(watched=("/srv",)), "watched[0]: '/srv' is not one of mounts", id="within-a-sibling"),
    pytest.param(Settings(device="/dev/../kmsg"),
                 "device: must be an absolute path without a trailing slash, . or .., got '/dev/../kmsg'",
                 id="normal-path"),
    pytest.param(Settings(glob="a/b"), "glob: must be an interface glob, got 'a/b'", id="text-form"),
    pytest.param(Settings(request_timeout=10 * SECOND), "requestTimeout: must be shorter than timeout (10s), got 10s",
                 id="shorter-than-a-sibling"),
    pytest.param(Settings(absent_every=SECOND), "absentEvery: must not be shorter than interval (30s), got 1s",
                 id="not-shorter-than-a-sibling"),
    pytest.param(Settings(timing=CheckTiming(interval=20 * SECOND, timeout=30 * SECOND)),
                 "timeout: must not be longer than interval (20s), got 30s", id="timing-keys-as-written"),
])
def test_each_bound_names_the_key_as_written_the_bound_and_the_value(config: Settings, expected: str) -> None:
    assert problems(config) == [expected]


def test_a_relation_is_judged_only_once_the_value_itself_is_within_its_range() -> None:
    assert problems(Settings(request_timeout=-SECOND)) == ["requestTimeout: must be positive, got -1s"]


def test_every_problem_is_listed_in_field_order_nested_configs_at_their_place() -> None:
    config = Settings(count=0, limits=Limits(max_percent=0), port=0)
    assert [problem.keys for problem in field_problems(config)] == [("count",), ("port",), ("limits", "maxPercent")]


@dataclass(frozen=True)
class Related:
    first: int = bounded(1, AT_LEAST_ONE)
    second: int = 2

    def related_problems(self) -> list[FieldProblem]:
        return [] if self.first < self.second else [FieldProblem(("second",), "must be above first")]


@dataclass(frozen=True)
class Outer:
    inner: Related = field(default_factory=Related)


def test_a_config_states_what_no_single_bound_can_say_and_it_is_placed_under_its_parent() -> None:
    assert problems(Outer()) == []
    assert problems(Outer(Related(first=0, second=0))) == ["inner.first: must be at least 1, got 0",
                                                           "inner.second: must be above first"]


def test_a_problem_with_a_list_item_says_which_item() -> None:
    found = field_problems(Settings(mounts=("/", "/", "x")))
    assert [(problem.path, problem.index) for problem in found] == [(("mounts",), 1), (("mounts",), 2)]
    assert [str(problem) for problem in found] == ["mounts[1]: '/' is listed twice, as mounts[0] too",
                                                   "mounts[2]: must be an absolute path, got 'x'"]
