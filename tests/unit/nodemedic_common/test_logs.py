"""Logs, one line per event: JSON for pipelines, text for a terminal, both with every `extra` field."""

from __future__ import annotations

import json
import logging
import sys

import pytest

from nodemedic_common import logs


def line(fmt: str, message: str, **extra: object) -> str:
    log = logs.setup("nodemedic.test", "INFO", fmt)
    handler = logging.getLogger().handlers[0]
    assert isinstance(handler, logging.StreamHandler)
    record = log.makeRecord("nodemedic.test", logging.WARNING, __file__, 1, message, (), None, extra=extra)
    return handler.format(record)


def test_json_is_one_object_with_every_field() -> None:
    doc = json.loads(line("json", "policy rejected", policy="/p.yaml", errors=["a: bad", "b: worse"]))
    assert (doc["level"], doc["logger"], doc["msg"]) == ("warning", "nodemedic.test", "policy rejected")
    assert (doc["policy"], doc["errors"]) == ("/p.yaml", ["a: bad", "b: worse"])


def test_text_is_one_line_of_message_then_key_value_pairs_that_split_back() -> None:
    text = line("text", "taint write failed", node="n1", error="HTTP 409: Conflict", tries=3)
    head, _, pairs = text.partition("  ")
    assert head.split(" ", 2)[1:] == ["WARNING", "nodemedic.test: taint write failed"]
    assert pairs == 'node=n1 error="HTTP 409: Conflict" tries=3'
    assert "\n" not in text


@pytest.mark.parametrize("fmt", logs.FORMATS)
def test_an_exception_is_kept_with_its_event(fmt: str) -> None:
    log = logs.setup("nodemedic.test", "INFO", fmt)
    handler = logging.getLogger().handlers[0]
    try:
        raise ValueError("odd data")
    except ValueError:
        record = log.makeRecord("nodemedic.test", logging.ERROR, __file__, 1, "cycle failed", (), sys.exc_info())
    assert "ValueError: odd data" in handler.format(record)
