"""managedFields cut from the bytes: every object of kube-apiserver 1.37's own answers (tests/testdata/api/, taken
from the benchmark cluster of `make bench-descheduler`: a pod page, a node page, priority classes, watch events) loses
exactly that member, and no JSON document, however its strings are made, decodes to anything but itself less some
managedFields members."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from nodemedic_common.managed_fields import without_managed_fields

ANSWERS = Path(__file__).resolve().parents[2] / "testdata" / "api"


def compact(doc: Any) -> bytes:
    """As Go's encoding/json writes it: no spaces, non-ASCII as is."""
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()


def dropped(doc: Any) -> Any:
    """`doc` without any managedFields member."""
    if isinstance(doc, dict):
        return {k: dropped(v) for k, v in doc.items() if k != "managedFields"}
    if isinstance(doc, list):
        return [dropped(v) for v in doc]
    return doc


def only_managed_fields_gone(before: Any, after: Any) -> bool:
    """`after` is `before` with zero or more managedFields members taken out, nothing else changed."""
    if isinstance(before, dict) and isinstance(after, dict):
        return (set(after) <= set(before) and set(before) - set(after) <= {"managedFields"}
                and list(after) == [k for k in before if k in after]
                and all(only_managed_fields_gone(before[k], after[k]) for k in after))
    if isinstance(before, list) and isinstance(after, list):
        return len(before) == len(after) and all(map(only_managed_fields_gone, before, after))
    return type(before) is type(after) and before == after


def test_the_api_servers_own_lists_lose_managed_fields_and_nothing_else() -> None:
    for name in ("pods-page.json", "nodes-page.json", "priorityclasses.json"):
        raw = (ANSWERS / name).read_bytes()
        whole = json.loads(raw)
        assert all("managedFields" in item["metadata"] for item in whole["items"]), name
        cut = without_managed_fields(raw)
        assert json.loads(cut) == dropped(whole), name
        assert len(cut) < len(raw) * 0.8, name


def test_watch_events_lose_them_too() -> None:
    for line in (ANSWERS / "pods-watch.jsonl").read_bytes().splitlines():
        assert json.loads(without_managed_fields(line)) == dropped(json.loads(line))


def test_an_answer_without_managed_fields_is_returned_as_it_came() -> None:
    raw = compact({"items": [{"metadata": {"name": "a"}, "spec": {}}]})
    assert without_managed_fields(raw) is raw


ENTRY = {"manager": "kubectl", "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {".": {}}}}


def pod(metadata: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": metadata, "spec": {"nodeName": "n"}, "status": {"phase": "Running"}}


def test_what_cannot_be_told_from_the_bytes_is_decoded_whole() -> None:
    kept = [
        pod({"managedFields": [ENTRY], "name": "first-member"}),  # no comma before it
        pod({"name": "a", "managedFields": [ENTRY | {"manager": "x]},"}]}),  # a string ending like the end
        pod({"name": "a", "managedFields": [ENTRY | {"manager": "[x"}]}),
        pod({"name": "a", "managedFields": [ENTRY | {"extra": [1]}]}),  # an array inside: not Go's shape
        {"metadata": {"name": "a", "managedFields": [ENTRY]}},  # metadata last: the next `]},"` is another's
    ]
    for doc in kept:
        assert json.loads(without_managed_fields(compact(doc))) == doc


def test_metadata_last_does_not_reach_into_the_next_object() -> None:
    doc = {"items": [{"metadata": {"name": "a", "managedFields": [ENTRY]}},
                     pod({"name": "b", "managedFields": [ENTRY]})]}
    assert json.loads(without_managed_fields(compact(doc))) == {
        "items": [doc["items"][0], pod({"name": "b"})]}


def test_escaped_quotes_and_brackets_in_strings_are_strings() -> None:
    tricky = 'a\\"]},\\"spec\\":{\\"nodeName\\":\\"evil\\"}'
    doc = pod({"name": tricky, "annotations": {"k": ']},"spec":[', "j": "\\"}, "managedFields": [
        ENTRY | {"manager": 'm"]}', "fieldsV1": {'f:{"]}': {}, "f:x": {".": {}}}}]})
    assert json.loads(without_managed_fields(compact(doc))) == dropped(doc)


JSON_TEXT = st.text(alphabet=st.sampled_from('ab"\\[]{},:é\n'), max_size=12)
FIELDS = st.recursive(st.just({}), lambda inner: st.dictionaries(JSON_TEXT, inner, max_size=3), max_leaves=8)
SCALARS = st.none() | st.booleans() | st.integers() | JSON_TEXT
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(JSON_TEXT, inner,
                                                                                         max_size=3), max_leaves=10)
ENTRIES = st.lists(st.fixed_dictionaries({"manager": JSON_TEXT, "operation": JSON_TEXT, "fieldsV1": FIELDS}),
                   max_size=3)


@st.composite
def objects(draw: st.DrawFn) -> dict[str, Any]:
    metadata = draw(st.dictionaries(JSON_TEXT, VALUES, max_size=3))
    metadata["managedFields"] = draw(ENTRIES)  # last, as Go writes it
    doc = {"metadata": metadata}
    doc.update(draw(st.dictionaries(JSON_TEXT, VALUES, max_size=3)))
    return doc


@settings(max_examples=1000, deadline=None)
@given(st.lists(objects(), min_size=1, max_size=3))
def test_any_document_decodes_to_itself_less_managed_fields_members(items: list[dict[str, Any]]) -> None:
    raw = compact({"kind": "List", "items": items})
    assert only_managed_fields_gone(json.loads(raw), json.loads(without_managed_fields(raw)))
