"""The tests' running order: the longest first, by their durations in the last `make test`.

pytest-xdist hands a free worker the next unit of work (a test, or the tests of an `xdist_group` that share a
module-scoped cluster) in collection order: a two-minute test collected last ends the run two minutes after every
other worker went idle. `hack/test.py` records each test's time (setup and teardown included) from its junit reports
into the build cache, and the root conftest sorts the collection by it, the longest unit first (longest processing
time first, the classic rule for this). Without a record (a new machine) the collection order stays as it is; a
test the record lacks counts as 0 s. The order never decides an outcome: every test still runs.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from pathlib import Path

import pytest

from hack.kcp import paths


def record_path() -> Path:
    return paths.cache_root() / "test-durations.json"


def key(nodeid: str) -> str:
    """A test's name as junit writes it: `tests.e2e.test_x[.Class]::test_y[param]`."""
    path, *rest = nodeid.split("::")
    module = path.removesuffix(".py").replace("/", ".")
    return module + "".join(f".{part}" for part in rest[:-1]) + "::" + (rest[-1] if rest else "")


def record(reports: Iterable[Path]) -> None:
    """Merge the times of these junit reports into the record (a test not run this time keeps its old time)."""
    known = load()
    for report in reports:
        if report.exists():
            for case in ET.parse(report).getroot().iter("testcase"):
                # pytest-xdist's loadgroup renames a grouped test `name@group`; the collection, sorted before
                # that, knows it by its plain name.
                name = re.sub(r"@[\w.-]+$", "", case.get("name", ""))
                known[f"{case.get('classname', '')}::{name}"] = float(case.get("time") or 0.0)
    target = record_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    tmp.write_text(json.dumps(known, indent=0, sort_keys=True))
    tmp.replace(target)


def load() -> dict[str, float]:
    try:
        data = json.loads(record_path().read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in data.items() if isinstance(v, int | float)} if isinstance(data, dict) else {}


def _unit(item: pytest.Item) -> str:
    group = item.get_closest_marker("xdist_group")
    return f"group:{group.args[0] if group.args else group.kwargs.get('name')}" if group else item.nodeid


def longest_first(items: list[pytest.Item], known: dict[str, float]) -> None:
    """Sort in place: units of work by their summed recorded time, longest first; a group's tests stay together
    in their collection order."""
    if not known:
        return
    seconds: dict[str, float] = {}
    for item in items:
        unit = _unit(item)
        seconds[unit] = seconds.get(unit, 0.0) + known.get(key(item.nodeid), 0.0)
    items.sort(key=lambda item: -seconds[_unit(item)])
