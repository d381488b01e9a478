"""A check setting's bounds, declared once on its dataclass field, and the one function that checks them.

```python
some_avg60: float = bounded(80.0, PERCENT)
request_timeout: dt.timedelta = bounded(dt.timedelta(seconds=2), Bounds(above=ZERO, shorter_than="timing.timeout"))
mounts: tuple[str, ...] = bounded(("/",), Bounds(not_empty=True, form=absolute_path, distinct_by=posixpath.normpath))
```
`field_problems(config)` walks a config (and the dataclasses inside it), and names each field out of its bounds the way
the user wrote it: the camelCase key of the agent config, `interval` and `timeout` for `timing`'s fields, the index of
a list item, the bound and the value given ("thresholds.someAvg60: must be above 0 and at most 100, got 150").
A field's bounds relate it to a sibling by the sibling's path in the same dataclass ("timing.timeout"). What no bound
can say (a rule over three fields) a config states in `related_problems()` (the `Related` protocol).
"""

from __future__ import annotations

import datetime as dt
import operator
import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field, fields, is_dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from nodemedic_common.durations import format_duration
from nodemedic_common.inputs import quoted

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T")
Form = Callable[[str], str | None]  # what is wrong with a text ("must be an absolute path"), None when nothing is
Limit = int | float | dt.timedelta

ZERO = dt.timedelta(0)
_KEY = "nodemedic.bounds"


@dataclass(frozen=True)
class Bounds:
    """What a field's value may be. A range (`above`/`at_least`, `at_most`/`below`) applies to a number or a duration;
    `form`, `not_empty`, `distinct_by` and `within` to a text or to each text of a list; the `..._than` bounds compare
    a duration with a sibling's, named by its path in the same dataclass."""

    above: Limit | None = None
    at_least: Limit | None = None
    at_most: Limit | None = None
    below: Limit | None = None
    why: str = ""  # the reason for the range (not for a sibling's bound), shown with it
    choices: tuple[str, ...] = ()
    form: Form | None = None
    not_empty: bool = False
    distinct_by: Callable[[str], str] | None = None  # no two items the same by this key
    within: str = ""  # each item is one of this sibling list's items
    shorter_than: str = ""
    not_longer_than: str = ""
    not_shorter_than: str = ""


PERCENT = Bounds(above=0, at_most=100)  # a share of something; 0 would be True on every node
POSITIVE = Bounds(above=ZERO)
AT_LEAST_ONE = Bounds(at_least=1)
PORT = Bounds(at_least=1, at_most=65535)


def bounded(default: T, bounds: Bounds) -> T:
    """A dataclass field with `default` and `bounds` (an immutable default: a tuple, not a list)."""
    made: T = field(default=default, metadata={_KEY: bounds})
    return made


@dataclass(frozen=True)
class FieldProblem:
    path: tuple[str, ...]  # dataclass field names from the config down, e.g. ("thresholds", "some_avg60")
    message: str
    index: int | None = None  # the list item at fault

    @property
    def keys(self) -> tuple[str, ...]:
        """The keys the user wrote: camelCase, and `timing`'s fields without it (`interval`, not `timing.interval`)."""
        return tuple(camel_case(name) for name in self.path if name != "timing")

    def __str__(self) -> str:
        item = "" if self.index is None else f"[{self.index}]"
        return f"{'.'.join(self.keys)}{item}: {self.message}"


@runtime_checkable
class Related(Protocol):
    def related_problems(self) -> list[FieldProblem]:
        """What is wrong between this config's fields that no single field's bounds can say."""
        ...


def camel_case(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.capitalize() for word in rest)


def field_problems(config: DataclassInstance, path: tuple[str, ...] = ()) -> list[FieldProblem]:
    """Every field of `config`, and of the dataclasses in it, out of its declared bounds, in field order."""
    problems: list[FieldProblem] = []
    for each in fields(config):
        value = getattr(config, each.name)
        where = (*path, each.name)
        if is_dataclass(value) and not isinstance(value, type):
            problems += field_problems(value, where)
        bounds = each.metadata.get(_KEY)
        if bounds is not None:
            problems += [FieldProblem(where, message, index)
                         for index, message in _check(config, each.name, value, bounds)]
    if isinstance(config, Related):
        problems += [FieldProblem((*path, *p.path), p.message, p.index) for p in config.related_problems()]
    return problems


def _check(owner: object, name: str, value: Any, bounds: Bounds) -> list[tuple[int | None, str]]:
    if isinstance(value, int | float | dt.timedelta) and not isinstance(value, bool):
        problem = _range_problem(value, bounds) or _sibling_problem(owner, value, bounds)
        return [] if problem is None else [(None, problem)]
    items = value if isinstance(value, tuple) else (value,)
    index: Callable[[int], int | None] = (lambda i: i) if isinstance(value, tuple) else (lambda i: None)
    if bounds.not_empty and not value:
        return [(None, "must not be empty")]
    problems: list[tuple[int | None, str]] = []
    firsts: dict[str, int] = {}
    allowed = _sibling(owner, bounds.within) if bounds.within else ()
    for i, item in enumerate(items):
        if bounds.choices and item not in bounds.choices:
            problems.append((index(i), f"must be one of {', '.join(bounds.choices)}, got {quoted(item)}"))
        elif bounds.form is not None and (problem := bounds.form(item)):
            problems.append((index(i), problem))
        elif bounds.distinct_by is not None and (first := firsts.setdefault(bounds.distinct_by(item), i)) != i:
            problems.append((index(i), f"{quoted(item)} is listed twice, as {camel_case(name)}[{first}] too"))
        elif bounds.within and item not in allowed:
            problems.append((index(i), f"{quoted(item)} is not one of {camel_case(bounds.within)}"))
    return problems


def _range_problem(value: Limit, bounds: Bounds) -> str | None:
    # A value fits when every comparison holds: NaN, which compares false with everything, never does.
    tests = (("above", bounds.above, operator.gt), ("at least", bounds.at_least, operator.ge),
             ("at most", bounds.at_most, operator.le), ("below", bounds.below, operator.lt))
    given = [(words, limit) for words, limit, _ in tests if limit is not None]
    if all(test(value, limit) for _, limit, test in tests if limit is not None):
        return None
    if given in ([("above", 0)], [("above", ZERO)]):
        wanted = "positive"
    elif given in ([("at least", 0)], [("at least", ZERO)]):
        return f"must not be negative, got {_shown(value)}"
    else:
        wanted = " and ".join(f"{words} {_shown(limit)}" for words, limit in given)
    return f"must be {wanted}{f' ({bounds.why})' if bounds.why else ''}, got {_shown(value)}"


def _sibling_problem(owner: object, value: Limit, bounds: Bounds) -> str | None:
    for path, words, fits in ((bounds.shorter_than, "be shorter than", operator.lt),
                              (bounds.not_longer_than, "not be longer than", operator.le),
                              (bounds.not_shorter_than, "not be shorter than", operator.ge)):
        if path and not fits(value, limit := _sibling(owner, path)):
            name = ".".join(FieldProblem(tuple(path.split(".")), "").keys)
            return f"must {words} {name} ({_shown(limit)}), got {_shown(value)}"
    return None


def _sibling(owner: object, path: str) -> Any:
    value = owner
    for name in path.split("."):
        value = getattr(value, name)
    return value


def _shown(value: Limit) -> str:
    if isinstance(value, dt.timedelta):
        return format_duration(value)
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


# --- forms every check may give its texts -----------------------------------------------------------------


def absolute_path(text: str) -> str | None:
    return None if text.startswith("/") else f"must be an absolute path, got {quoted(text)}"


def normal_absolute_path(text: str) -> str | None:
    """An absolute path as the kernel's mount table writes it: no trailing slash, no `.`, `..` or `//`."""
    if text.startswith("/") and posixpath.normpath(text) == text:
        return None
    return f"must be an absolute path without a trailing slash, . or .., got {quoted(text)}"


def text_form(description: str, fits: Callable[[str], bool]) -> Form:
    """A form that is a rule in words: "must be DESCRIPTION, got 'VALUE'" when `fits` refuses the text."""
    def problem(text: str) -> str | None:
        return None if fits(text) else f"must be {description}, got {quoted(text)}"
    return problem
