"""A Migration object written and read back (model/migration.py), and the objects it refuses to read."""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
from typing import Any

import pytest

from remediator.model.migration import (
    Decision,
    Gain,
    Migration,
    MigrationError,
    Phase,
    Step,
    StepState,
    StepStatus,
    migrations_path,
    proposal,
    read_migration,
    status_body,
)

NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
MIGRATION = Migration(name="migration-0011aabb", namespace="ops", engine="BalanceResourceMix", proposed=NOW,
                      expires=NOW + dt.timedelta(hours=1), gain=Gain("resource-mix deviation (points)", 161.684, 122.9),
                      steps=(Step("shop/a", "uid-a", "ReplicaSet/web", "rs-web", "n1", "n2", "n2.example"),),
                      disrupts=("shop/ReplicaSet/web (PDB shop/web allows 1)",))


def written() -> dict[str, Any]:
    doc = proposal(MIGRATION)
    doc["metadata"]["resourceVersion"] = "7"  # type: ignore[index]
    doc.update(status_body(Phase.PROPOSED, (StepStatus(0, StepState.PENDING),), "waiting for a decision", NOW))
    return doc


def test_a_proposal_reads_back_as_written_with_its_status() -> None:
    m = read_migration(written())
    assert m == dataclasses.replace(MIGRATION, gain=Gain("resource-mix deviation (points)", 161.68, 122.9),
                                    phase=Phase.PROPOSED, message="waiting for a decision",
                                    step_status=(StepStatus(0, StepState.PENDING),), resource_version="7")
    assert m.decision == Decision.NONE
    assert migrations_path("ops") == "/apis/nodemedic.io/v1alpha1/namespaces/ops/migrations"
    spec = written()["spec"]
    assert spec["stepCount"] == 1
    assert spec["steps"][0] == {"pod": "shop/a", "podUID": "uid-a", "owner": "ReplicaSet/web", "ownerUID": "rs-web",
                                "from": "n1", "to": "n2", "hostname": "n2.example"}


def test_a_migration_without_status_reads_as_not_proposed_by_a_remediator() -> None:
    doc = written()
    del doc["status"]
    assert read_migration(doc).phase is None


@pytest.mark.parametrize(("path", "value", "error"), [
    (("spec", "engine"), "Scheduler", "spec.engine: 'Scheduler' is not one of"),
    (("spec", "steps"), [], "spec.steps: a list of 1 to 50 steps expected"),
    (("spec", "steps", 0, "to"), 5, "spec.steps[0].to: a non-empty string expected, got 5"),
    (("spec", "steps", 0, "pod"), "a", "spec.steps[0].pod: namespace/name expected"),
    (("spec", "decision"), "Maybe", "spec.decision: 'Maybe' is not Approved or Rejected"),
    (("spec", "expires"), "tomorrow", "spec.expires: an RFC 3339 time expected"),
    (("spec", "gain", "before"), True, "spec.gain.before: a number expected"),
    (("status", "phase"), "Done", "status.phase: 'Done' is not a phase the remediator writes"),
    (("status", "steps", 0, "index"), 3, "status.steps[0].index: a step of spec.steps expected, got 3"),
    (("status", "steps", 0, "state"), "Gone", "status.steps[0].state: 'Gone' is not a step state"),
    (("spec",), "x", "spec: an object expected"),
])
def test_an_object_the_crd_would_not_admit_is_refused_naming_it_and_the_field(path: tuple[Any, ...], value: object,
                                                                             error: str) -> None:
    doc = copy.deepcopy(written())
    target = doc
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    with pytest.raises(MigrationError, match=r"^Migration ops/migration-0011aabb: ") as e:
        read_migration(doc)
    assert error in str(e.value)


@pytest.mark.parametrize("doc", [None, [], {"metadata": 5}, {"metadata": {"name": "x"}}])
def test_an_answer_that_is_not_an_object_is_refused(doc: object) -> None:
    with pytest.raises(MigrationError):
        read_migration(doc)
