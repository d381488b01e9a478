"""RE2 (Go) patterns, as NPD's rule files are written, translated to Python's `re` (see logmonitor_config.py for
what is translated and what is refused)."""

from __future__ import annotations

import re
import warnings

_POSIX_CLASSES = {
    "alnum": "0-9A-Za-z", "alpha": "A-Za-z", "ascii": r"\x00-\x7f", "blank": r"\t ", "cntrl": r"\x00-\x1f\x7f",
    "digit": "0-9", "graph": "!-~", "lower": "a-z", "print": " -~", "punct": r"!-/:-@\[-`{-~",
    "space": r"\t\n\v\f\r ", "upper": "A-Z", "word": "0-9A-Za-z_", "xdigit": "0-9A-Fa-f",
}
_NEGATED_POSIX = {"digit": r"\D", "space": r"\S", "word": r"\W"}
_FLAG_GROUP = re.compile(r"\(\?([a-zA-Z]*(?:-[a-zA-Z]*)?)([:)])")


def translate_re2(pattern: str) -> str:
    """Rewrite an RE2 pattern into Python `re` syntax with the same meaning; ValueError for what has none."""
    return _Re2Translator(pattern).run()


class _Re2Translator:
    """One pass over an RE2 pattern. It also notes whether any piece can match "\\n"; if none can, a match
    always lies within one line, so the monitor searches only the newest line instead of the whole buffer."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.may_match_newline = False

    def run(self) -> str:
        pattern, out = self.pattern, []
        switches: list[list[str]] = [[]]  # per open group: "(?i)"-style flag switches, scoped until the group ends
        pos = 0
        while pos < len(pattern):
            char = pattern[pos]
            if char == "\\":
                text, pos = self.escape(pos, in_class=False)
                out.append(text)
            elif char == "[":
                text, pos = self.char_class(pos)
                out.append(text)
            elif char == "(":
                flags = _FLAG_GROUP.match(pattern, pos)
                if flags is not None:
                    letters, kind = flags.groups()
                    if set(letters) - set("ims-"):
                        raise ValueError(f"flags {letters!r}: only i, m and s have a Python equivalent")
                    if kind == ")" and letters.strip("-") == "":
                        raise ValueError("empty flag group (?)")
                    self.may_match_newline |= "s" in letters.partition("-")[0]  # "." then matches a newline
                    out.append(f"(?{letters}:")
                    if kind == ")":  # a switch: Python allows one only at the start, so scope it to its group
                        switches[-1].append(letters)
                    else:
                        switches.append([])
                    pos = flags.end()
                    continue
                if pattern.startswith("(?<", pos) and not pattern.startswith(("(?<=", "(?<!"), pos):
                    out.append("(?P<")
                    pos += 3
                else:
                    out.append("(")
                    pos += 1
                switches.append([])
            elif char == ")":
                if len(switches) == 1:
                    raise ValueError(f"unexpected ) at position {pos}")
                out.append(")" * len(switches.pop()) + ")")
                pos += 1
            elif char == "|":  # a switch applies to the rest of its alternative and to the following ones
                open_ = switches[-1]
                out.append(")" * len(open_) + "|" + "".join(f"(?{letters}:" for letters in open_))
                pos += 1
            else:
                self.may_match_newline |= char == "\n"
                out.append(char)
                pos += 1
        if len(switches) > 1:
            raise ValueError("missing closing )")
        out.append(")" * len(switches[0]))
        return "".join(out)

    def escape(self, pos: int, *, in_class: bool) -> tuple[str, int]:
        text, end = self._escape(pos, in_class=in_class)
        if not in_class:
            self.may_match_newline |= _matches_newline(text)
        return text, end

    def _escape(self, pos: int, *, in_class: bool) -> tuple[str, int]:
        pattern = self.pattern
        if pos + 1 >= len(pattern):
            raise ValueError("trailing backslash at end of pattern")
        char = pattern[pos + 1]
        if char == "z" and not in_class:
            return r"\Z", pos + 2
        if char == "Q" and not in_class:
            end = pattern.find(r"\E", pos + 2)
            text = pattern[pos + 2:] if end < 0 else pattern[pos + 2:end]
            return re.escape(text), len(pattern) if end < 0 else end + 2
        if char == "x" and pattern.startswith("{", pos + 2):
            end = pattern.find("}", pos + 3)
            try:
                literal = chr(int(pattern[pos + 3:end], 16) if end > 0 else -1)
            except ValueError:
                raise ValueError(f"invalid escape {pattern[pos:end + 1 if end > 0 else None]!r}") from None
            return re.escape(literal), end + 1
        if char == "x":  # \xHH: taken whole so the newline test sees the character, not a bare \x
            return pattern[pos:pos + 4], pos + 4
        if char in "01234567":  # Go reads octal here; Python would read \1..\7 as a backreference
            digits = re.match(r"[0-7]{1,3}", pattern[pos + 1:pos + 4])
            assert digits is not None
            if char != "0" and len(digits.group()) == 1:
                raise ValueError(f"backreference \\{char} is not supported (RE2 has no backreferences)")
            return re.escape(chr(int(digits.group(), 8))), pos + 1 + len(digits.group())
        if char in "89":
            raise ValueError(f"backreference \\{char} is not supported (RE2 has no backreferences)")
        if char in "pP":
            raise ValueError(f"Unicode class \\{char} is not supported by Python's re")
        if char == "C":
            raise ValueError(r"\C (any byte) is not supported by Python's re")
        return pattern[pos:pos + 2], pos + 2

    def char_class(self, start: int) -> tuple[str, int]:
        pattern, out, pos = self.pattern, ["["], start + 1
        if pattern.startswith("^", pos):
            out.append("^")
            pos += 1
        if pattern.startswith("]", pos):  # a leading ] is a literal in RE2
            out.append(r"\]")
            pos += 1
        while pos < len(pattern):
            char = pattern[pos]
            if char == "]":
                out.append("]")
                text = "".join(out)
                self.may_match_newline |= _matches_newline(text)
                return text, pos + 1
            if char == "\\":
                text, pos = self.escape(pos, in_class=True)
                out.append(text)
            elif pattern.startswith("[:", pos) and (end := pattern.find(":]", pos + 2)) > 0:
                out.append(_posix_class(pattern[pos + 2:end]))
                pos = end + 2
            elif char in "[&~|":  # literals in RE2; Python warns that they may become set operators
                out.append("\\" + char)
                pos += 1
            else:
                out.append(char)
                pos += 1
        raise ValueError(f"missing closing ] for the class at position {start}")


def _matches_newline(piece: str) -> bool:
    """Whether one translated escape or character class matches "\\n" (tried, not guessed)."""
    try:
        return _compile(piece).fullmatch("\n") is not None
    except ValueError:
        return True  # the whole pattern fails to compile right after; be conservative until then


def _posix_class(name: str) -> str:
    if name.startswith("^"):
        if name[1:] in _NEGATED_POSIX:
            return _NEGATED_POSIX[name[1:]]
        raise ValueError(f"negated POSIX class [:{name}:] is not supported; use a negated class [^...]")
    if name not in _POSIX_CLASSES:
        raise ValueError(f"unknown POSIX class [:{name}:]")
    return _POSIX_CLASSES[name]


def compile_rule_pattern(pattern: str) -> tuple[re.Pattern[str], bool]:
    """(regex anchored at the end of the text, whether a match can span lines); ValueError with the reason."""
    translator = _Re2Translator(pattern)
    translated = translator.run()
    return _compile(f"(?:{translated})\\Z"), translator.may_match_newline


def compile_plain_pattern(pattern: str) -> re.Pattern[str]:
    return _compile(translate_re2(pattern))


def _compile(translated: str) -> re.Pattern[str]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # nested-set warnings: RE2 reads those as literals too
            return re.compile(translated, re.ASCII)
    except re.error as exc:
        raise ValueError(str(exc)) from None
