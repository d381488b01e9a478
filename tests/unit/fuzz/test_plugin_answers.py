"""Fuzz: whatever a leader (or anything answering on its port) sends for /plan, /status or /why, `kubectl nodemedic`
reads it into its typed answer and words it, or refuses it with the one error it reports as "the leader answered
something this plugin does not understand" (Unreadable); never another exception, never a control character on the
terminal; and a plan it reads is written back as the same answer. Inputs: random JSON, and mutants of real
answers (every section the plugin reads filled in)."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from remediator.control.planner import PlannerMemory, make_plan
from remediator.kubectl import render
from remediator.kubectl.reach import Leader
from remediator.policy.loader import load_policy
from remediator.read_side.fields import Unreadable
from remediator.read_side.plan_answer import PlanAnswer
from remediator.read_side.status_answer import StatusAnswer
from remediator.read_side.why_answer import WhyAnswer
from remediator.state.caches import snapshot_from_list
from remediator.strategies import CATALOG
from tests.unit.fuzz.strategies import FUZZ, json_values, mutated

ROOT = Path(__file__).resolve().parents[3]
NOW = dt.datetime(2026, 6, 1, 12, tzinfo=dt.UTC)
LEADER = Leader("ops", "nm-7d9f", "8080", "nm", "nm-7d9f_1", "2026-06-01T12:00:00Z")
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")  # all but the lines' own \n


def _plan(snapshot: str, policy: str) -> dict[str, Any]:
    doc = json.loads((ROOT / "tests/testdata/snapshots" / snapshot).read_text())
    policy_file = str(ROOT / "tests/testdata/policies" / policy)
    plan = make_plan(snapshot_from_list(doc, NOW), load_policy(policy_file, catalog=CATALOG), PlannerMemory())
    out: dict[str, Any] = _trimmed(json.loads(json.dumps(PlanAnswer.of(plan).to_json())))
    return out


def _trimmed(doc: Any) -> Any:
    """At most two items of each list: every shape is still there, and a mutant costs little to copy and read."""
    if isinstance(doc, dict):
        return {k: _trimmed(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_trimmed(v) for v in doc[:2]]
    return doc


# Real answers with evictions, taints, repair steps and dark nodes in them, and the parts no snapshot makes.
PLANS = [_plan("deschedule-strategies.json", "good/deschedule-demo.yaml"),
         _plan("repair-ladder.json", "good/full.yaml"), _plan("dark-nodes.json", "good/full.yaml"),
         _plan("balance-strategies.json", "good/balance-strategies.yaml"),
         {"zoneExposure": [{"namespace": "shop", "workload": "Deployment/d", "perZone": {"zone-a": 1, "zone-c": 3},
                            "surviving": 0.5, "best": 0.667, "moves": [{"from": "zone-c", "to": "zone-a", "pods": 1}]}],
          "schedulerLoops": [{"namespace": "shop", "owner": "ReplicaSet/e-1", "node": "n1",
                              "since": "2026-06-01T11:00:00Z", "until": "2026-06-01T13:00:00Z", "note": "loop"}],
          "held": [{"node": "n1", "key": "k", "effect": "NoSchedule", "rule": "r", "why": "breaker"}],
          "protected": [{"namespace": "a", "name": "p", "node": "n1", "why": "pdb"}]}]
STATUS = {"identity": "nm-7d9f_1", "leading": True, "dryRun": False, "mode": "deployment", "version": "0.1.0",
          "policy": {"file": "/p.yaml", "sha256": "0123456789ab"}}
WHY = {"node": "n1", "at": "2026-06-01T12:00:00Z", "facts": [
    {"topic": "rule", "sentence": "waits", "changesAt": "2026-06-01T12:03:00Z", "changesIn": "3m0s"},
    {"topic": "node", "sentence": "n1 is Ready"}]}


def read_and_word(path: str, doc: Any) -> str:
    """What the plugin prints for `doc` as the answer to `path`."""
    if path == "/plan":
        plan = PlanAnswer.read(doc)
        written = json.dumps(plan.to_json())  # as text: a NaN is not equal to itself
        assert json.dumps(PlanAnswer.read(json.loads(written)).to_json()) == written
        return render.plan(plan) + "\n" + render.status(LEADER, StatusAnswer.read(STATUS), plan, [])
    if path == "/status":
        return render.status(LEADER, StatusAnswer.read(doc), PlanAnswer(), [])
    return render.why(WhyAnswer.read(doc, path))


ANSWERS = st.one_of(st.tuples(st.just("/plan"), st.sampled_from(PLANS).flatmap(mutated)),
                    st.tuples(st.just("/status"), mutated(STATUS)), st.tuples(st.just("/why/n1"), mutated(WHY)),
                    st.tuples(st.sampled_from(["/plan", "/status", "/why/n1"]), json_values))


@FUZZ
@given(answer=ANSWERS)
def test_any_answer_is_read_and_worded_or_refused_as_not_understood(answer: tuple[str, Any]) -> None:
    path, doc = answer
    try:
        text = read_and_word(path, doc)
    except Unreadable as e:
        assert str(e).startswith(path), e  # the place named, from the answer's path on
        return
    assert not CONTROL.search(text), repr(text)
