"""The repair contract: the agent's reading of the `nodemedic.io/repair` ask (ids, actions, services, times and each
malformed field named), the bounded JSON object reader, RFC 3339 times, and the "request <id>: " answers."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from nodemedic_common.repair_contract import (
    MAX_ANNOTATION_BYTES,
    ContractError,
    RepairAction,
    RepairRequest,
    answer_message,
    answered_id,
    format_time,
    json_object,
    parse_request,
    parse_time,
)

T = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)


def _ask(**fields: object) -> str:
    doc: dict[str, object] = {"id": "r-1", "action": "restart", "service": "kubelet",
                              "requested": "2026-01-02T03:04:05Z", "history": [{"ignored": True}]}
    doc.update(fields)
    return json.dumps({k: v for k, v in doc.items() if v is not ...})


def test_a_restart_ask_is_read_with_its_service_and_time() -> None:
    assert parse_request(_ask()) == RepairRequest("r-1", RepairAction.RESTART, "kubelet", T)


def test_a_reboot_ask_without_a_service_is_read() -> None:
    assert parse_request(_ask(action="reboot", service=...)) == RepairRequest("r-1", RepairAction.REBOOT, "", T)


@pytest.mark.parametrize("action", ["replace", "person"])
def test_a_step_that_is_not_the_agents_is_none(action: str) -> None:
    assert parse_request(_ask(action=action, service=..., requested=...)) is None


@pytest.mark.parametrize(("fields", "message"), [
    ({"id": "Upper"}, "nodemedic.io/repair: id: expected a lowercase name of at most 63 characters"),
    ({"id": "a" * 64}, "nodemedic.io/repair: id: expected a lowercase name of at most 63 characters"),
    ({"id": 7}, "nodemedic.io/repair: id: expected a lowercase name of at most 63 characters"),
    ({"id": ...}, "nodemedic.io/repair: id: expected a lowercase name of at most 63 characters"),
    ({"action": "drain"}, "nodemedic.io/repair: action: expected one of restart, reboot, replace, person"),
    ({"service": "sshd"}, "nodemedic.io/repair: service: expected one of kubelet, containerd, crio"),
    ({"service": ...}, "nodemedic.io/repair: service: expected one of kubelet, containerd, crio"),
    ({"action": "reboot"}, "nodemedic.io/repair: service: only a restart names one"),
    ({"requested": "yesterday"}, "nodemedic.io/repair: requested: expected an RFC 3339 time"),
    ({"requested": "2026-01-02T03:04:05"}, "nodemedic.io/repair: requested: expected an RFC 3339 time"),
])
def test_a_malformed_ask_is_a_contract_error_naming_the_field(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ContractError) as caught:
        parse_request(_ask(**fields))
    assert str(caught.value).startswith(message)


def test_the_longest_allowed_id_is_accepted() -> None:
    request = parse_request(_ask(id="a" + "b.-" * 20 + "cd"))
    assert request is not None and len(request.id) == 63


def test_json_object_refuses_text_over_the_byte_bound() -> None:
    with pytest.raises(ContractError, match=f"where: longer than {MAX_ANNOTATION_BYTES} bytes"):
        json_object(json.dumps({"x": "é" * (MAX_ANNOTATION_BYTES // 2)}), "where")  # bytes, not characters


def test_json_object_refuses_text_that_is_not_json_or_nested_too_deeply() -> None:
    with pytest.raises(ContractError, match=r"^where: not JSON \(Expecting property name"):
        json_object("{not json", "where")
    with pytest.raises(ContractError, match=r"where: not JSON \(nested too deeply\)"):
        json_object("[" * 5000 + "]" * 5000, "where")


@pytest.mark.parametrize(("text", "kind"), [("[]", "list"), ('"x"', "str"), ("3", "int"), ("null", "NoneType")])
def test_json_object_refuses_a_value_that_is_not_an_object_naming_its_type(text: str, kind: str) -> None:
    with pytest.raises(ContractError, match=f"where: expected a JSON object, got {kind}"):
        json_object(text, "where")


def test_json_object_returns_the_object() -> None:
    assert json_object('{"a": [1, 2]}', "where") == {"a": [1, 2]}


@pytest.mark.parametrize(("value", "expected"), [
    ("2026-01-02T03:04:05Z", T),
    ("2026-01-02T05:04:05+02:00", T),
    ("2026-01-02T03:04:05.5Z", T.replace(microsecond=500000)),
    ("2026-01-02T03:04:05", None),  # no zone: not RFC 3339
    ("not a time", None),
    ("", None),
    (None, None),
    (1767323045, None),
    ("2026-01-02T03:04:05Z" + " " * 30, None),  # over 40 characters
])
def test_parse_time_reads_an_rfc3339_time_with_a_zone_else_none(value: object, expected: dt.datetime | None) -> None:
    assert parse_time(value) == expected


def test_format_time_writes_utc_seconds_with_z_and_parse_time_reads_it_back() -> None:
    local = dt.datetime(2026, 1, 2, 5, 4, 5, 999999, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert format_time(local) == "2026-01-02T03:04:05Z"
    assert parse_time(format_time(local)) == T


def test_an_answer_message_names_its_request_and_answered_id_reads_it_back() -> None:
    message = answer_message("r-1", "restarted kubelet: it answers")
    assert message == "request r-1: restarted kubelet: it answers"
    assert answered_id(message) == "r-1"


@pytest.mark.parametrize("message", ["restarted kubelet", "request Bad_Id: x", "request : x", "Request r-1: x"])
def test_answered_id_is_none_when_the_message_names_no_valid_request(message: str) -> None:
    assert answered_id(message) is None
