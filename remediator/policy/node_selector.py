"""`nodeSelector`: the nodes nodemedic acts on, as descheduler's top-level field is (a label selector in the string
form kubectl and descheduler parse: `a=b,c!=d,e in (f,g),h notin (i),j,!k`). Nodes it does not select are outside
the policy altogether: no taint, no eviction from them, no pod moved onto them, and the circuit breaker's percent
counts only the selected nodes."""

from __future__ import annotations

import re

from remediator.model.records import LabelSelector, SelectorRequirement
from remediator.policy.reader import Reader, Section, is_null
from remediator.policy.syntax import label_value_problem, qualified_name_problem

# One requirement: `key`, `!key`, `key=v`, `key==v`, `key!=v`, `key in (v,...)`, `key notin (v,...)`.
_SET = re.compile(r"^\s*(?P<key>[^\s!=(),]+)\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)\s*$")
_EQUALITY = re.compile(r"^\s*(?P<key>[^\s!=(),]+)\s*(?P<op>==|=|!=)\s*(?P<value>[^\s!=(),]*)\s*$")
_EXISTS = re.compile(r"^\s*(?P<not>!?)\s*(?P<key>[^\s!=(),]+)\s*$")


def read_node_selector(r: Reader, top: Section) -> LabelSelector | None:
    node = top.values.get("nodeSelector")
    if node is None or is_null(node):
        return None
    text = r.value(node, "nodeSelector")
    if not isinstance(text, str):
        r.wrong(node, "nodeSelector", "a label selector string", text)
        return None
    try:
        return parse_selector(text)
    except ValueError as e:
        r.error(node, "nodeSelector", f"{e} (a label selector such as \"node-role.kubernetes.io/worker\" or "
                                      f"\"pool in (a,b),!excluded\")")
        return None


def parse_selector(text: str) -> LabelSelector:
    """The string form of a label selector; ValueError names the requirement that does not parse."""
    labels: list[tuple[str, str]] = []
    expressions: list[SelectorRequirement] = []
    for part in _requirements(text):
        if m := _SET.match(part):
            values = tuple(v.strip() for v in m["values"].split(","))
            for v in values:
                _check_value(part, v)
            expressions.append(SelectorRequirement(_key(part, m["key"]), "In" if m["op"] == "in" else "NotIn",
                                                   tuple(sorted(set(values)))))
        elif m := _EQUALITY.match(part):
            key = _key(part, m["key"])
            _check_value(part, m["value"])
            if m["op"] == "!=":
                expressions.append(SelectorRequirement(key, "NotIn", (m["value"],)))
            else:
                labels.append((key, m["value"]))
        elif m := _EXISTS.match(part):
            expressions.append(SelectorRequirement(_key(part, m["key"]), "DoesNotExist" if m["not"] else "Exists", ()))
        else:
            raise ValueError(f"cannot parse {part.strip()!r}")
    return LabelSelector(match_labels=tuple(labels), match_expressions=tuple(expressions))


def _requirements(text: str) -> list[str]:
    """Split on the commas outside parentheses; an empty requirement (",,", a trailing comma) is an error."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced ')' at character {i + 1}")
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth:
        raise ValueError("unbalanced '('")
    parts.append(text[start:])
    if not text.strip():
        raise ValueError("empty: leave nodeSelector out to act on every node")
    for p in parts:
        if not p.strip():
            raise ValueError("an empty requirement between commas")
    return parts


def _key(part: str, key: str) -> str:
    problem = qualified_name_problem(key)
    if problem is not None:
        raise ValueError(f"{part.strip()!r}: {problem}")
    return key


def _check_value(part: str, value: str) -> None:
    problem = label_value_problem(value)
    if problem is not None:
        raise ValueError(f"{part.strip()!r}: {problem}")
