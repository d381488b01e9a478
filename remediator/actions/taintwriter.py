"""The one place that writes taints: one merge patch per node carrying the new taint list and the
ownership annotation together, guarded by the node's resourceVersion.

The taint list is replaced as a whole (Node.spec.taints has no merge key), so the patch is computed from
the node as last read and sent with that resourceVersion: if anyone changed the node meanwhile (a human's
cordon, the autoscaler, kwok) the API server answers 409 and we re-read and re-apply only our own changes.
Taints we do not own are copied through untouched. A change whose conditions the node no longer shows as the plan
read them (TaintChange.premise), in the cache or on that re-read, is not written: it waits for the next plan.
What we own is read again with the node: a taint of ours that an earlier write put there unseen by the cache (its
answer lost, or the next cycle ahead of the watch) is ours and already in place, never a human's to leave alone.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nodemedic_common.kube_client import Kube
from nodemedic_common.kube_errors import UNKNOWN_FATE, ApiError
from remediator.model.plan import TaintChange
from remediator.model.records import Condition, Effect, Taint
from remediator.planning.owned_taints import OwnedTaint, parse_owned, render_owned
from remediator.policy.model import OWNED_TAINTS_ANNOTATION
from remediator.state import records


@dataclass(frozen=True)
class TaintWrite:
    owned: list[OwnedTaint]  # what we own on the node afterwards
    added: list[TaintChange]
    removed: list[TaintChange]
    deferred: list[TaintChange]  # the node no longer shows the conditions they were decided on
    # changes the node already shows made, by an earlier write of ours the cache had not shown: not written again
    in_place: list[TaintChange]

    def unwritten(self) -> list[tuple[str, TaintChange]]:
        """The plan's changes not written, each with the log line that says why."""
        return [("taint change deferred: the node's conditions changed since the plan", c) for c in self.deferred] + [
            ("taint change already in place: an earlier write landed before the node watch showed it", c)
            for c in self.in_place]


def _identity(raw: dict[str, Any]) -> tuple[str, str]:
    return (str(raw.get("key", "")), str(raw.get("effect", "")))


def _as_read(node: dict[str, Any]) -> tuple[list[dict[str, Any]], list[OwnedTaint]]:
    """A Node as the API returned it: its taint list, and what its annotation records as ours."""
    annotations = (node.get("metadata") or {}).get("annotations") or {}
    return (node.get("spec") or {}).get("taints") or [], parse_owned(annotations.get(OWNED_TAINTS_ANNOTATION))[0]


def _already_done(adds: Sequence[TaintChange], removes: Sequence[TaintChange], current: Sequence[dict[str, Any]],
                  mine: set[tuple[str, str]]) -> list[TaintChange]:
    """The changes the node already shows made: each add on it as it is (value included) and recorded as ours, each
    removal neither on it nor recorded as ours."""
    present = {_identity(t) for t in current}
    return [c for c in adds if c.taint.identity() in mine and any(
        _identity(t) == c.taint.identity() and str(t.get("value", "")) == c.taint.value for t in current)] + [
        c for c in removes if c.taint.identity() not in present and c.taint.identity() not in mine]


def new_taint_list(current: Sequence[dict[str, Any]], add: Sequence[Taint], remove: Sequence[Taint],
                   now: dt.datetime) -> list[dict[str, Any]]:
    gone = {t.identity() for t in remove}
    out = [dict(t) for t in current if _identity(t) not in gone]
    present = {_identity(t) for t in out}
    for t in add:
        if t.identity() in present:
            continue  # someone (maybe a human) already has this key/effect: never overwrite their value
        raw: dict[str, Any] = {"key": t.key, "effect": str(t.effect)}
        if t.value:
            raw["value"] = t.value
        if t.effect == Effect.NO_EXECUTE:
            raw["timeAdded"] = now.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        out.append(raw)
    return out


def owned_after(owned: Sequence[OwnedTaint], current: Sequence[dict[str, Any]], adds: Sequence[TaintChange],
                removes: Sequence[TaintChange], now: dt.datetime) -> list[OwnedTaint]:
    """What nodemedic owns on the node once the patch lands: never a taint someone else put there first."""
    gone = {c.taint.identity() for c in removes}
    present_before = {_identity(t) for t in current}
    mine = {o.taint.identity() for o in owned}
    # An owned entry whose taint someone removed is dropped: if a human later adds that key/effect, it is theirs.
    out = [o for o in owned if o.taint.identity() not in gone and o.taint.identity() in present_before]
    for c in adds:
        ident = c.taint.identity()
        if ident in present_before and ident not in mine:
            continue  # a human's taint with this key/effect: leave it theirs
        out = [o for o in out if o.taint.identity() != ident]
        out.append(OwnedTaint(taint=c.taint, rules=c.rules, cause=c.cause, since=now))
    return out


async def write_node_taints(kube: Kube, node: str, *, base: dict[str, Any] | None, conditions: Sequence[Condition],
                            adds: Sequence[TaintChange], removes: Sequence[TaintChange], owned: Sequence[OwnedTaint],
                            now: dt.datetime, attempts: int = 4) -> TaintWrite:
    """Apply our taint changes to `node`: those whose premise the node still shows.

    `base` is the cached {"resourceVersion", "taints"} of the node, `conditions` its conditions in the same cache and
    `owned` the ownership record of its annotation there (all three re-read from the API on conflict).
    """
    path = f"/api/v1/nodes/{node}"
    mine = {o.taint.identity() for o in owned}
    deferred: list[TaintChange] = []
    in_place: list[TaintChange] = []
    for _ in range(attempts):
        if base is None:
            fresh = await kube.get(path)
            taints, owned = _as_read(fresh)
            base = {"resourceVersion": fresh["metadata"]["resourceVersion"], "taints": taints}
            conditions = records.node(fresh).conditions
            mine = {o.taint.identity() for o in owned}
        newly = [c for c in (*adds, *removes) if not c.still_holds(conditions)]
        deferred += newly
        adds = [c for c in adds if c not in newly]
        removes = [c for c in removes if c not in newly]
        done = _already_done(adds, removes, base["taints"], mine)
        in_place += done
        adds = [c for c in adds if c not in done]
        removes = [c for c in removes if c not in done]
        # Only remove what we own; on a re-read the human may have removed it already (then nothing to do).
        removable = [c for c in removes if c.taint.identity() in mine]
        after = owned_after(owned, base["taints"], adds, removable, now)
        if (deferred or in_place) and not adds and not removable:
            return TaintWrite(list(owned), [], [], deferred, in_place)  # nothing of the plan left to write here
        patch = {
            "metadata": {"resourceVersion": base["resourceVersion"],
                         "annotations": {OWNED_TAINTS_ANNOTATION: render_owned(after)}},
            "spec": {"taints": new_taint_list(base["taints"], [c.taint for c in adds],
                                              [c.taint for c in removable], now)},
        }
        try:
            await kube.request("PATCH", path, body=patch, content_type="application/merge-patch+json")
            return TaintWrite(after, list(adds), removable, deferred, in_place)
        except ApiError as e:
            if e.status in UNKNOWN_FATE and (landed := await _landed(kube, path, adds, removable)) is not None:
                return TaintWrite(landed, list(adds), removable, deferred, in_place)  # announced like any write
            if e.status != 409:
                raise
            base = None  # changed under us: re-read and recompute
    raise ApiError(409, "PATCH", path, f"node {node} kept changing; gave up after {attempts} attempts")


async def _landed(kube: Kube, path: str, adds: Sequence[TaintChange],
                  removes: Sequence[TaintChange]) -> list[OwnedTaint] | None:
    """After a write whose answer was lost: what we own on the node when the node shows the write carried out (every
    add ours and in place, every removal gone), else None (not carried out, or the node cannot be read now)."""
    try:
        taints, owned = _as_read(await kube.get(path))
    except ApiError:
        return None
    done = _already_done(adds, removes, taints, {o.taint.identity() for o in owned})
    return owned if len(done) == len(adds) + len(removes) else None
