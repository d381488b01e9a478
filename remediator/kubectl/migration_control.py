"""`kubectl nodemedic migrations [NAME]`, `approve NAME`, `reject NAME`: the engines' migrations a person decides.

Read and decided with the person's own credentials: listing takes `get` and `list` on migrations (the chart's viewer
role), deciding takes `patch` (the approver role, rbac.approverGroups): a viewer cannot approve. A decision is a merge
patch of spec.decision, spec.decidedBy and spec.decidedAt, guarded by the resourceVersion read, so that two people
deciding at once do not both win; the CRD's rules keep every other field of the spec, and a decision once made. The
remediator re-checks an approved plan against the cluster before its first step.
"""

from __future__ import annotations

import datetime as dt
import json

from nodemedic_common.kube_client import Kube
from nodemedic_common.kube_errors import ApiError
from nodemedic_common.repair_contract import format_time
from nodemedic_common.terminal_text import printable
from remediator.kubectl import migration_view
from remediator.kubectl.names import DNS_SUBDOMAIN
from remediator.kubectl.repair_control import who
from remediator.model.migration import (
    MAX_ANSWER,
    MIGRATION_PREFIX,
    Decision,
    Migration,
    MigrationError,
    Phase,
    migrations_path,
    read_migration,
)


class Refused(Exception):
    """The decision makes no sense for this migration (the message says why); nothing was written."""


def name_of(text: str) -> str:
    """A migration's name as given, or its 8 hex digits alone."""
    name = text if text.startswith(MIGRATION_PREFIX) else MIGRATION_PREFIX + text
    if not DNS_SUBDOMAIN.fullmatch(name):
        raise Refused(f"{text!r} is not a migration name")
    return name


async def show(kube: Kube, namespace: str, name: str | None, *, output: str) -> str:
    if name is None:
        doc = await kube.request("GET", migrations_path(namespace), params={"limit": "500"}, limit=MAX_ANSWER)
        items = doc.get("items") if isinstance(doc, dict) else None
        if output == "json":
            return json.dumps(items or [], indent=1)
        found, problems = [], []
        for item in items if isinstance(items, list) else ():
            try:
                found.append(read_migration(item))
            except MigrationError as e:
                problems.append(f"unreadable: {printable(str(e))}")
        return migration_view.listing(sorted(found, key=lambda m: m.proposed, reverse=True), problems)
    m, doc = await _read(kube, namespace, name)
    return json.dumps(doc, indent=1) if output == "json" else migration_view.detail(m)


async def decide(kube: Kube, namespace: str, name: str, decision: Decision, *, now: dt.datetime) -> str:
    m, _ = await _read(kube, namespace, name)
    if m.phase is None:
        raise Refused(f"{name} was not proposed by nodemedic (no status from the remediator): it never runs")
    if m.decision != Decision.NONE:
        raise Refused(f"{name} is already {m.decision.value.lower()} by {m.decided_by or 'someone'}")
    if m.phase != Phase.PROPOSED:
        raise Refused(f"{name} is {m.phase.value}: nothing to decide")
    if now >= m.expires:
        raise Refused(f"{name} expired at {format_time(m.expires)}: nothing moves; the engine proposes again when "
                      "it still finds the moves worth making")
    by = await who(kube)
    body = {"metadata": {"resourceVersion": m.resource_version},
            "spec": {"decision": decision.value, "decidedBy": by, "decidedAt": format_time(now)}}
    try:
        await kube.request("PATCH", f"{migrations_path(namespace)}/{name}", body=body,
                           content_type="application/merge-patch+json")
    except ApiError as e:
        if e.status == 409:
            raise Refused(f"{name} changed since it was read (someone else decided, or the remediator moved it "
                          "on): look again with `kubectl nodemedic migrations`") from None
        raise
    if decision == Decision.REJECTED:
        return f"{name} rejected by {by}: nothing moves"
    return (f"{name} approved by {by}: the remediator re-checks its {len(m.steps)} step(s) against the cluster and "
            f"runs them one at a time; `kubectl nodemedic migrations {name}` shows each step")


async def _read(kube: Kube, namespace: str, name: str) -> tuple[Migration, object]:
    try:
        doc = await kube.request("GET", f"{migrations_path(namespace)}/{name}", limit=MAX_ANSWER)
    except ApiError as e:
        if e.status == 404:
            raise Refused(f"no migration {name} in namespace {namespace} (`kubectl nodemedic migrations` lists "
                          "them)") from None
        raise
    try:
        return read_migration(doc), doc
    except MigrationError as e:
        raise Refused(f"{printable(str(e))}: not decided") from None
