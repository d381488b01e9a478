"""The migrations worded for a person (kubectl/migration_view.py): every text from the cluster escaped."""

from __future__ import annotations

import datetime as dt

from remediator.kubectl.migration_view import detail, listing
from remediator.model.migration import Decision, Gain, Migration, Phase, Step, StepState, StepStatus

NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
M = Migration(name="migration-0011aabb", namespace="nodemedic", engine="BalanceResourceMix", proposed=NOW,
              expires=NOW + dt.timedelta(hours=1), gain=Gain("resource-mix deviation (points)", 160.0, 120.25),
              steps=(Step("shop/a\x1b[31m", "uid-a", "ReplicaSet/web", "rs-web", "n1", "n2", "n2"),),
              decision=Decision.APPROVED, decided_by="alice", phase=Phase.REVERTING,
              step_status=(StepStatus(0, StepState.UNDOING, "", NOW, "moving shop/a2 back to n1"),),
              message="step 2 failed: node n3 is tainted")


def test_the_list_says_what_each_plan_buys_who_decided_and_where_it_stands() -> None:
    text = listing([M, M.__class__(**{**M.__dict__, "phase": None, "decision": Decision.NONE})], ["unreadable: x"])
    lines = text.splitlines()
    assert "Approved by alice" in lines[1] and "Reverting" in lines[1] and "160 -> 120.25" in lines[1]
    assert "waiting" in lines[2] and "not nodemedic's" in lines[2] and lines[3] == "unreadable: x"
    assert listing([], []).startswith("no migrations")


def test_one_plan_shows_each_step_with_its_state_and_escapes_what_the_cluster_wrote() -> None:
    text = detail(M)
    assert "status      step 2 failed: node n3 is tainted" in text and "Undoing" in text
    assert "\x1b" not in text and "moving shop/a2 back to n1" in text
