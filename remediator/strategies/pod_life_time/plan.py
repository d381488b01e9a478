"""PodLifeTime: evict pods older than `maxPodLifeTimeSeconds` and/or in one of `states` (the talk's "restart
everything nightly").

descheduler's algorithm (`podlifetime/pod_lifetime.go`): over Ready nodes, every pod in scope, terminal ones too.
Each given filter must pass: age since creationTimestamp strictly over maxPodLifeTimeSeconds (a pod from the
future never); `states` matches the pod's phase, its status reason, or a waiting/terminated reason of a container
(init containers' with `includingInitContainers`, ephemeral containers' with `includingEphemeralContainers`);
`ownerKinds` include (some owner listed) or exclude (no owner listed); `conditions`: some filter matches some pod
condition (its given type, status and reason, and a lastTransitionTime at least minTimeSinceLastTransitionSeconds
ago); `exitCodes` matches a terminated container's exit code. Candidates from every node, oldest first.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from functools import partial

from remediator.model.plan import PlannedEviction
from remediator.model.records import PodCondition, PodRecord
from remediator.state.snapshot import Snapshot
from remediator.strategies.pod_life_time.args import ConditionFilter, PodLifeTimeArgs
from remediator.strategies.pod_life_time.kept import OldestPods, oldest_created
from remediator.strategies.pod_scope import ready_nodes

NAME = "PodLifeTime"
KIND = "deschedule"


def matching_state(pod: PodRecord, args: PodLifeTimeArgs) -> str | None:
    if pod.phase in args.states:
        return pod.phase
    if pod.reason in args.states:
        return pod.reason
    groups = [pod.containers]
    if args.including_init_containers:
        groups.append(pod.init_containers)
    if args.including_ephemeral_containers:
        groups.append(pod.ephemeral_containers)
    for c in groups:
        for reason in (*c.waiting, *c.terminated):
            if reason in args.states:
                return reason
    return None


def _matches(pod: PodRecord, c: PodCondition, f: ConditionFilter, now: dt.datetime) -> bool:
    if (f.type and c.type != f.type) or (f.status and c.status != f.status) or (f.reason and c.reason != f.reason):
        return False
    if f.min_time_since_last_transition_seconds is None:
        return True
    since = pod.transitioned(c)  # descheduler: whole seconds since >= N, i.e. at or before now - N
    return since is not None and since <= now - dt.timedelta(seconds=f.min_time_since_last_transition_seconds)


def matching_condition(pod: PodRecord, filters: tuple[ConditionFilter, ...], now: dt.datetime) -> str | None:
    """The first pod condition some filter matches, as type=status (reason) since when; None when none does."""
    for f in filters:
        for c in pod.conditions:
            if _matches(pod, c, f, now):
                since = pod.transitioned(c)
                ago = "" if since is None else f" for {int((now - since).total_seconds())}s"
                return f"condition {c.type}={c.status}" + (f" ({c.reason})" if c.reason else "") + ago
    return None


def _owner_kinds_allow(pod: PodRecord, args: PodLifeTimeArgs) -> bool:
    kinds = {o.kind for o in pod.owners}
    if args.owner_kinds_include and not kinds & set(args.owner_kinds_include):
        return False
    return not (args.owner_kinds_exclude and kinds & set(args.owner_kinds_exclude))


def _reason(pod: PodRecord, args: PodLifeTimeArgs, now: dt.datetime, born_by: dt.datetime | None) -> str | None:
    """Why the pod goes, or None when a given filter refuses it. `born_by`: the latest creation time over the
    maximum age (whole seconds strictly over maxPodLifeTimeSeconds, as descheduler counts)."""
    parts: list[str] = []
    if born_by is not None:
        if pod.created is None or pod.created > born_by:
            return None
        parts.append(f"age {int((now - pod.created).total_seconds())}s > maxPodLifeTimeSeconds "
                     f"{args.max_pod_life_time_seconds}")
    if args.states:
        state = matching_state(pod, args)
        if state is None:
            return None
        parts.append(f"state {state}")
    if not _owner_kinds_allow(pod, args):
        return None
    if args.conditions:
        condition = matching_condition(pod, args.conditions, now)
        if condition is None:
            return None
        parts.append(condition)
    if args.exit_codes:
        codes = pod.containers.exit_codes + (pod.init_containers.exit_codes if args.including_init_containers else ())
        hit = next((c for c in codes if c in args.exit_codes), None)
        if hit is None:
            return None
        parts.append(f"exit code {hit}")
    return "; ".join(parts)


def candidates(snapshot: Snapshot, args: PodLifeTimeArgs) -> Iterator[PlannedEviction]:
    found: list[PlannedEviction] = []
    now, most = snapshot.now, args.max_pod_life_time_seconds
    born_by = None if most is None else now - dt.timedelta(seconds=most + 1)
    scope = args.scope
    kept = snapshot.derived.kept_by(NAME, OldestPods).within(scope)
    nodes = ready_nodes(snapshot)
    for node in nodes:
        pods = snapshot.pods(node.name)
        if born_by is not None and ((first := kept.get(node.name, pods, partial(oldest_created, scope=scope))) is None
                                    or first > born_by):
            continue  # every pod in scope too young (or of unknown age): refused below
        for pod in scope.select(pods):
            if (reason := _reason(pod, args, now, born_by)) is not None:
                found.append(PlannedEviction(pod, NAME, reason))
    if born_by is not None and len(kept) > len(nodes):  # every Ready node has its entry now: the others are gone
        kept.keep_only({node.name for node in nodes})
    oldest = snapshot.now
    found.sort(key=lambda e: (e.pod.created or oldest, e.pod.namespace, e.pod.name))
    yield from found
