"""Text from the cluster reaches a terminal with every control character shown as its escape, nothing else
changed."""

from __future__ import annotations

import pytest

from nodemedic_common.terminal_text import printable


@pytest.mark.parametrize(("text", "shown"), [
    ("\x1b]52;c;ZXZpbA==\x07", "\\x1b]52;c;ZXZpbA==\\x07"),  # OSC 52: a write to the reader's clipboard
    ("\x1b[2J\x1b[H", "\\x1b[2J\\x1b[H"),  # clear the screen, cursor home
    ("ok\rFAILED", "ok\\rFAILED"),  # a carriage return prints over the line
    ("a\nb\tc\x00", "a\\nb\\tc\\x00"),
    ("\x7f\x9b31m", "\\x7f\\x9b31m"),  # DEL, and CSI as one C1 character
    ("\u202egnp.exe", "\\u202egnp.exe"),  # a right-to-left override reverses what follows
    ("\u2066x\u2069\u200f\u2028", "\\u2066x\\u2069\\u200f\\u2028"),
    # A file name's non-UTF-8 byte (surrogateescape) no UTF-8 output can encode; U+FFFE, which YAML refuses.
    ("bad\udcff.yaml\ufffe", "bad\\udcff.yaml\\ufffe"),
])
def test_control_characters_are_shown_as_their_escapes(text: str, shown: str) -> None:
    assert printable(text) == shown


def test_printable_text_is_left_as_it_is() -> None:
    text = "KernelDeadlock=True: task jbd2 blocked — containerd 1.7.2 ✓ 日本語 \\x1b"
    assert printable(text) == text


def test_what_printable_returns_encodes_as_strict_utf8() -> None:
    """A lone surrogate left in would raise UnicodeEncodeError where stdout or a written file is strict UTF-8."""
    printable("a\udcff\ud800b").encode("utf-8")
