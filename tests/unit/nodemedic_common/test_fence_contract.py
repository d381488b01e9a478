"""The fence contract: a `nodemedic.io/fence` record written as compact JSON (time in UTC, detail cut at 500) and
read back, and each malformed field of a record refused with a `ContractError` naming it."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from nodemedic_common.fence_contract import Evidence, FenceAction, FenceRecord, parse_record
from nodemedic_common.repair_contract import ContractError

T = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)


def test_a_record_is_written_as_compact_json_with_its_time_in_utc() -> None:
    record = FenceRecord(T.astimezone(dt.timezone(dt.timedelta(hours=-5))), FenceAction.TAINT, Evidence.PERSON,
                         "confirmed by alice")
    assert record.to_annotation() == (
        '{"at":"2026-01-02T03:04:05Z","action":"taint","evidence":"person","detail":"confirmed by alice"}')


def test_a_record_reads_back_as_written() -> None:
    record = FenceRecord(T, FenceAction.REPLACE, Evidence.NODECLAIM, "nodeclaim default-abc deleted")
    assert parse_record(record.to_annotation()) == record


def test_a_long_detail_is_cut_to_500_characters_in_the_annotation() -> None:
    record = FenceRecord(T, FenceAction.TAINT, Evidence.REBOOT, "x" * 700)
    assert parse_record(record.to_annotation()).detail == "x" * 500


def test_a_record_without_detail_or_with_a_non_string_detail_reads_as_an_empty_detail() -> None:
    base = {"at": "2026-01-02T03:04:05Z", "action": "taint", "evidence": "reboot"}
    assert parse_record(json.dumps(base)).detail == ""
    assert parse_record(json.dumps({**base, "detail": ["a"]})).detail == ""


@pytest.mark.parametrize(("doc", "message"), [
    ({"action": "taint", "evidence": "person"}, "nodemedic.io/fence: at: not an RFC 3339 time: None"),
    ({"at": "yesterday", "action": "taint", "evidence": "person"},
     "nodemedic.io/fence: at: not an RFC 3339 time: 'yesterday'"),
    ({"at": "2026-01-02T03:04:05Z", "action": "cordon", "evidence": "person"},
     "nodemedic.io/fence: 'cordon' is not a valid FenceAction"),
    ({"at": "2026-01-02T03:04:05Z", "action": "taint", "evidence": "rumour"},
     "nodemedic.io/fence: 'rumour' is not a valid Evidence"),
    ({"at": "2026-01-02T03:04:05Z", "action": "taint"}, "nodemedic.io/fence: 'None' is not a valid Evidence"),
])
def test_a_malformed_record_is_a_contract_error_naming_the_field(doc: dict[str, object], message: str) -> None:
    with pytest.raises(ContractError) as caught:
        parse_record(json.dumps(doc))
    assert str(caught.value) == message


def test_a_record_that_is_not_a_json_object_is_refused_naming_the_annotation() -> None:
    with pytest.raises(ContractError, match=r"nodemedic\.io/fence: expected a JSON object, got list"):
        parse_record("[]")
