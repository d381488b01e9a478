"""status_answer.py: the /status answer as a replica writes it and `kubectl nodemedic` reads it back (its policy a
section of its own), and the answers of the wrong shape it refuses."""

from __future__ import annotations

import pytest

from remediator.read_side.fields import Unreadable
from remediator.read_side.status_answer import StatusAnswer

STATUS = StatusAnswer(identity="r-1_ab", leading=False, dry_run=True, mode="once", version="1.2.3",
                      policy_file="/etc/nodemedic/policy.yaml", policy_sha256="0123456789ab")


def test_a_status_is_written_with_camel_case_keys_and_its_policy_as_a_section() -> None:
    assert STATUS.to_json() == {"identity": "r-1_ab", "leading": False, "dryRun": True, "mode": "once",
                                "version": "1.2.3",
                                "policy": {"file": "/etc/nodemedic/policy.yaml", "sha256": "0123456789ab"}}


def test_a_status_is_read_back_as_written_and_extra_keys_are_ignored() -> None:
    doc = STATUS.to_json() | {"uptime": "3h"}
    assert StatusAnswer.read(doc) == STATUS


def test_absent_flags_are_read_as_false() -> None:
    doc = {"identity": "r", "mode": "deployment", "version": "1", "policy": {"file": "f", "sha256": "s"}}
    answer = StatusAnswer.read(doc)
    assert (answer.leading, answer.dry_run) == (False, False)


@pytest.mark.parametrize(("doc", "problem"), [
    ({"identity": "r", "mode": "m", "version": "1"}, "/status: policy: no file"),
    ({"identity": "r", "mode": "m", "version": "1", "policy": {"file": "f"}}, "/status: policy: no sha256"),
    ({"identity": "r", "mode": "m", "version": "1", "policy": "f"}, "/status: policy: a string, not an object"),
    ({"identity": "r", "leading": "yes", "mode": "m", "version": "1", "policy": {"file": "f", "sha256": "s"}},
     "/status: leading is a string, not a boolean"),
    ({"identity": 7, "mode": "m", "version": "1", "policy": {"file": "f", "sha256": "s"}},
     "/status: identity is a number, not a string"),
    ([STATUS.to_json()], "/status: a list, not an object"),
])
def test_a_status_of_the_wrong_shape_is_refused_with_the_place_named(doc: object, problem: str) -> None:
    with pytest.raises(Unreadable) as e:
        StatusAnswer.read(doc)
    assert str(e.value) == problem
