"""`ConfigError`: every problem a config reader found, kept as a list and printed one per line."""

from __future__ import annotations

import pytest

from nodemedic_common.config_errors import ConfigError


def test_a_config_error_keeps_every_problem_and_its_message_lists_them_one_per_line() -> None:
    problems = ("a.yaml:3: spec.x: unknown field", "a.yaml:9: spec.y: must be a duration")
    error = ConfigError(problems)
    assert error.errors == list(problems)
    assert str(error) == "a.yaml:3: spec.x: unknown field\na.yaml:9: spec.y: must be a duration"


def test_a_config_errors_list_is_its_own_copy_of_the_problems_given() -> None:
    problems = ["m.json: rules: must be a list, got an object"]
    error = ConfigError(problems)
    problems.append("added later")
    assert error.errors == ["m.json: rules: must be a list, got an object"]


def test_a_config_error_is_an_exception_callers_can_catch_and_read() -> None:
    with pytest.raises(ConfigError) as caught:
        raise ConfigError(["only one"])
    assert caught.value.errors == ["only one"] and str(caught.value) == "only one"
