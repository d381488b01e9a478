"""A landing's object and a pinned pod's annotation (model/landing.py)."""

from __future__ import annotations

import datetime as dt

from remediator.model.landing import Landing, landings_path, pinned_until

DEADLINE = dt.datetime(2026, 3, 1, 12, 2, tzinfo=dt.UTC)
LANDING = Landing(name="nodemedic-landing-0011aabb", namespace="shop", owner_uid="rs-web", owner="ReplicaSet/web",
                  node="n2", hostname="n2.example", moved="shop/a", source="n1",
                  decided=dt.datetime(2026, 3, 1, tzinfo=dt.UTC), before=frozenset({"shop/a"}),
                  strategy="BalanceResourceMix", lasts=dt.timedelta(minutes=2), deadline=DEADLINE)


def test_the_object_carries_what_the_admission_policy_reads_in_the_remediator_s_namespace() -> None:
    obj = LANDING.resource("ops")
    assert (obj["apiVersion"], obj["kind"]) == ("nodemedic.io/v1alpha1", "Landing")
    assert obj["metadata"] == {"name": "nodemedic-landing-0011aabb", "namespace": "ops"}
    spec = obj["spec"]
    assert isinstance(spec, dict)
    assert (spec["namespace"], spec["ownerUID"], spec["hostname"]) == ("shop", "rs-web", "n2.example")
    assert spec["annotation"] == "nodemedic-landing-0011aabb 2026-03-01T12:02:00Z"
    assert landings_path("ops") == "/apis/nodemedic.io/v1alpha1/namespaces/ops/landings"


def test_the_annotation_reads_back_as_the_landing_and_its_deadline() -> None:
    assert pinned_until(LANDING.annotation()) == (LANDING.name, DEADLINE)
    for other in ("", "nodemedic-landing-0011aabb", "x 2026-03-01T12:02:00Z",
                  "nodemedic-landing-0011aabbc 2026-03-01T12:02:00Z", "nodemedic-landing-0011aabb 2026-03-01T12:02:00"):
        assert pinned_until(other) is None, other
