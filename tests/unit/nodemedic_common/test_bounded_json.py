"""bounded_json.loads: json.loads, with nesting past the decoder's reach a NestedTooDeep (a ValueError every caller's
`except ValueError` already catches) saying where the text first goes deeper than MAX_NESTING."""

from __future__ import annotations

import pytest

from nodemedic_common.bounded_json import MAX_NESTING, NestedTooDeep, loads

DEEP = 100_000


def test_a_document_within_reach_decodes_as_json_loads_does() -> None:
    assert loads('{"a": [1, {"b": "[[[{"}]}') == {"a": [1, {"b": "[[[{"}]}
    assert loads(b"[" * 200 + b"]" * 200) == loads("[" * 200 + "]" * 200)


@pytest.mark.parametrize("text", ["[" * DEEP + "]" * DEEP, '{"a":' * DEEP + "1" + "}" * DEEP, "[" * DEEP],
                         ids=["lists", "objects", "unclosed"])
def test_nesting_past_the_decoder_is_a_value_error_at_the_first_bracket_too_deep(text: str) -> None:
    with pytest.raises(NestedTooDeep) as raised:
        loads(text)
    assert isinstance(raised.value, ValueError)
    first_too_deep = [i for i, c in enumerate(text) if c in "[{"][MAX_NESTING]
    assert (raised.value.line, raised.value.column) == (1, first_too_deep + 1)
    assert str(raised.value).startswith(f"line 1, column {first_too_deep + 1}: JSON nested deeper than 256 levels")


def test_brackets_inside_strings_and_lines_before_are_not_counted() -> None:
    text = '{"note": "]]]]\\"[[[[",\n "x":\n  ' + "[" * DEEP + "]" * DEEP + "}"
    with pytest.raises(NestedTooDeep) as raised:
        loads(text.encode())
    # The object is level 1: its 256th list, at column 3 + 255, opens level 257.
    assert (raised.value.line, raised.value.column) == (3, 3 + MAX_NESTING - 1)
