"""The Migration objects' writes (model/migration.py): a proposal created and its first status written, each
transition's status, and finished ones deleted once kept long enough. The only writes of migrations;
control/migrations.py decides them."""

from __future__ import annotations

import datetime as dt

from nodemedic_common.kube_client import Kube
from nodemedic_common.kube_errors import ApiError
from remediator.model.migration import (
    MAX_ANSWER,
    Migration,
    MigrationError,
    Phase,
    StepState,
    StepStatus,
    migrations_path,
    proposal,
    read_migration,
    status_body,
)

PAGE = "200"  # proposals are one per engine at a time: a page holds every open one and a week of finished ones


async def propose(kube: Kube, m: Migration, now: dt.datetime) -> None:
    """Create the object, then its status (the subresource: a create never sets it). Its status says it is ours."""
    await kube.request("POST", migrations_path(m.namespace), body=proposal(m))
    pending = tuple(StepStatus(i, StepState.PENDING) for i in range(len(m.steps)))
    await write_status(kube, m, status_body(Phase.PROPOSED, pending, "waiting for a decision: kubectl nodemedic "
                                                                     f"approve {m.name} (or reject)", now))


async def write_status(kube: Kube, m: Migration, body: dict[str, object]) -> None:
    """`body`: model/migration.py's status_body, the whole status (a merge patch replaces its lists)."""
    await kube.request("PATCH", f"{migrations_path(m.namespace)}/{m.name}/status", body=body,
                       content_type="application/merge-patch+json")


async def delete(kube: Kube, m: Migration) -> None:
    try:
        await kube.request("DELETE", f"{migrations_path(m.namespace)}/{m.name}")
    except ApiError as e:
        if e.status != 404:
            raise


async def listed(kube: Kube, namespace: str) -> tuple[list[Migration], list[str]]:
    """The namespace's Migrations, and why each one that cannot be read was not (object and field)."""
    doc = await kube.request("GET", migrations_path(namespace), params={"limit": PAGE}, limit=MAX_ANSWER)
    items = doc.get("items") if isinstance(doc, dict) else None
    found: list[Migration] = []
    problems: list[str] = []
    for item in items if isinstance(items, list) else ():
        try:
            found.append(read_migration(item))
        except MigrationError as e:
            problems.append(str(e))
    return found, problems
