"""Fuzz: any time in any time field of a cluster (year 1 to 9999, any offset, none, garbage) and any `now` costs at
most the record that carries it: the plan is made without raising, and a node whose own times are good is tainted
for its condition whatever the other nodes carry (issue 25: one "9999-12-31T23:59:59Z" stopped all remediation)."""

from __future__ import annotations

import copy
import datetime as dt
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from remediator.control.planner import PlannerMemory, make_plan
from remediator.policy.loader import load_policy
from remediator.state.caches import snapshot_from_list
from remediator.strategies import CATALOG
from tests.unit.fuzz.seeds import CLUSTER, NOW, OWNED
from tests.unit.fuzz.strategies import FUZZ

ROOT = Path(__file__).resolve().parents[3]
POLICY = load_policy(ROOT / "tests/testdata/policies/good/full.yaml",
                     catalog=CATALOG)  # every strategy, rules, limits, safety

@st.composite
def times(draw: st.DrawFn) -> str:
    """An RFC 3339-looking time anywhere in datetime's range, with a Z, an offset or none (naive), or garbage."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from(["", "garbage", "2026-13-01T00:00:00Z", "9999-12-31T23:59:59Z",
                                     "0001-01-01T00:00:00Z", "9999-12-31T23:59:59-23:59", "0001-01-01T00:00:00+23:59"]))
    stamp = draw(st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31, 23, 59, 59)))
    text = stamp.isoformat(timespec=draw(st.sampled_from(["seconds", "microseconds"])))
    offset = draw(st.one_of(st.none(), st.integers(-(23 * 60 + 59), 23 * 60 + 59)))
    if offset is None:
        return text if draw(st.booleans()) else text + "Z"
    sign, minutes = "+" if offset >= 0 else "-", abs(offset)
    return f"{text}{sign}{minutes // 60:02d}:{minutes % 60:02d}"


def _time_fields(doc: dict[str, Any]) -> list[tuple[dict[str, Any], str]]:
    """(the dict, its key) for every time of every Node and Pod, and the `since` of owned taints' annotation."""
    out: list[tuple[dict[str, Any], str]] = []
    for item in doc["items"]:
        if item["kind"] not in ("Node", "Pod"):
            continue
        out.append((item["metadata"], "creationTimestamp"))
        status = item.setdefault("status", {})
        if item["kind"] == "Pod":
            out.append((status, "startTime"))
            ready = {"type": "Ready", "status": "True", "lastTransitionTime": NOW.isoformat()}
            status.setdefault("conditions", [ready])
        out += [(c, "lastTransitionTime") for c in status.get("conditions", [])]
    return out


@FUZZ
@given(data=st.data(), now=st.datetimes(min_value=dt.datetime(1970, 1, 2), max_value=dt.datetime(2262, 4, 10),
                                       timezones=st.just(dt.UTC)))
def test_any_times_in_a_snapshot_cost_at_most_their_own_record(data: st.DataObject, now: dt.datetime) -> None:
    doc = copy.deepcopy(CLUSTER)
    # A second sick node whose times stay good: it must be tainted whatever the others carry.
    good = copy.deepcopy(next(i for i in doc["items"] if i["metadata"]["name"] == "sick"))
    good["metadata"]["name"] = "sick-good"
    good["metadata"]["annotations"] = {}
    good["spec"]["taints"] = []
    fields = _time_fields(doc)
    for where, key in data.draw(st.lists(st.sampled_from(fields), min_size=1, max_size=8)):
        where[key] = data.draw(times())
    good_at = now - dt.timedelta(hours=1)
    for c in good["status"]["conditions"]:
        c["lastTransitionTime"] = good_at.isoformat().replace("+00:00", "Z")
    doc["items"].append(good)
    if data.draw(st.booleans()):  # and an owned-taint annotation with a bad `since`
        bad_since = OWNED.replace("2026-01-01T11:00:00Z", data.draw(times()))
        doc["items"][0]["metadata"]["annotations"] = {"nodemedic.io/owned-taints": bad_since}
    warnings: list[str] = []
    snapshot = snapshot_from_list(doc, now, warn=warnings.append)
    plan = make_plan(snapshot, POLICY, PlannerMemory())
    tainted = {c.node for c in plan.taints_add} | {h.node for h in plan.held}
    assert "sick-good" in tainted, (plan.taints_add, plan.held)
    assert all(w.startswith("items[") and ": treated as unknown" in w for w in warnings)
