"""Nodes whose kubelet went silent, told apart by the second witness on the machine, the agent (docs/dark-nodes.md).

- Kubelet silent (`Ready=Unknown`), agent still writing → the machine runs and its kubelet does not: nothing is
  fenced; the rules' ladders (kubelet-unhealthy: restart the kubelet, then reboot) do the repair.
- Both silent for `darkNodes.agentSilence` → dark: nothing is known of the machine, so its pods stay where they are
  until there is evidence it is off (fence_contract.Evidence): a person's confirmation, a reboot the agent confirmed
  before it went silent, or its Karpenter NodeClaim deleted after `darkNodes.replaceAfter` (the autoscaler ends the
  instance and the node). With evidence the out-of-service taint goes on and the pod garbage collector frees the pods.
- More than `maxDarkPercent` of a zone or of the cluster dark (and more than two nodes, as kube-controller-manager
  counts a disrupted zone) → the network or the control plane failed, not the nodes: nothing is fenced there.
- A fenced node that is Ready again keeps the taint until its agent has reported since; then the taint goes.

Pure: reads the snapshot and the policy, returns a DarkPlan. Cost: linear in nodes; nothing is parsed for a node
whose kubelet reports and that carries no record of nodemedic's.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Mapping

from nodemedic_common.durations import format_duration, whole_seconds
from nodemedic_common.fence_contract import (
    CONFIRM_ANNOTATION,
    FENCE_ANNOTATION,
    KUBELET_CONDITIONS,
    OUT_OF_SERVICE_KEY,
    Evidence,
    FenceAction,
    FenceRecord,
    parse_record,
)
from nodemedic_common.repair_contract import (
    ANSWER_CONDITION,
    REPAIR_ANNOTATION,
    AnswerReason,
    ContractError,
    RepairAction,
    answered_id,
    parse_time,
)
from remediator.model.records import TERMINAL_PHASES, NodeRecord
from remediator.planning.owned_taints import OwnedTaint
from remediator.planning.repair_rails import RATE_WINDOW, group_of, halted_groups, opted_out, started_within
from remediator.policy.model import Policy
from remediator.policy.repair import ZONE_LABEL
from remediator.repair.dark_decisions import ClaimDelete, DarkPlan, Fence, Seen, SilentNode, Unfence
from remediator.repair.state import LadderState, StateError, parse_state
from remediator.state.snapshot import Snapshot

DISRUPTED_ABOVE = 2  # kube-controller-manager: a zone is disrupted only with more than two nodes not Ready


def agent_heard(node: NodeRecord) -> dt.datetime | None:
    """When a witness on the machine (the agent, or node-problem-detector) last wrote: the newest lastHeartbeatTime of
    a condition the kubelet does not own."""
    times = [c.heartbeat for c in node.conditions if c.type not in KUBELET_CONDITIONS and c.heartbeat is not None]
    return max(times, default=None)


def kubelet_silent_since(node: NodeRecord) -> dt.datetime | None:
    """When the node lifecycle controller marked the node `Ready=Unknown` (its kubelet stopped renewing its Lease),
    or None while the kubelet reports (Ready True or False)."""
    c = node.condition("Ready")
    if c is None or c.status != "Unknown":
        return None
    return c.held_since() or c.last_transition


def confirmed_at(node: NodeRecord) -> dt.datetime | None:
    return parse_time(node.annotations.get(CONFIRM_ANNOTATION, "").split(" ", 1)[0])


def plan_dark(snapshot: Snapshot, policy: Policy, owned_after: Mapping[str, list[OwnedTaint]]) -> tuple[
        DarkPlan, dt.datetime | None]:
    """The plan, and when it should be made again (a silence that becomes dark, a NodeClaim that becomes due)."""
    run = _Run(snapshot, policy, owned_after)
    for name in sorted(snapshot.nodes):
        run.classify(snapshot.nodes[name])
    if not run.dark:
        return run.plan, run.next_check
    run.halts()
    for name in sorted(run.dark):
        run.act(snapshot.nodes[name], run.dark[name])
    return run.plan, run.next_check


class _Run:
    def __init__(self, snapshot: Snapshot, policy: Policy, owned_after: Mapping[str, list[OwnedTaint]]) -> None:
        self.snapshot, self.policy, self.owned_after = snapshot, policy, owned_after
        self.now, self.settings = snapshot.now, policy.dark
        self.plan = DarkPlan()
        self.next_check: dt.datetime | None = None
        self.dark: dict[str, dt.datetime] = {}  # node -> kubelet silent since
        self.records: dict[str, FenceRecord] = {}
        self.busy: Counter[str] = Counter()  # group -> NodeClaims deleted and not yet gone
        # Fences and NodeClaim deletions share repair.maxPerHour with the ladders' steps (counted from the records).
        self.rate = started_within(filter(None, map(_ladder, snapshot.nodes.values())), self.now)

    def due(self, t: dt.datetime) -> None:
        self.next_check = t if self.next_check is None else min(self.next_check, t)

    def note(self, node: NodeRecord, seen: Seen, since: dt.datetime | None, why: str, **flags: bool) -> None:
        self.plan.nodes[node.name] = SilentNode(node.name, seen, since, agent_heard(node), why, **flags)

    # --- what each node is -----------------------------------------------------------------------------------------
    def classify(self, node: NodeRecord) -> None:
        record = self._record(node)
        since = kubelet_silent_since(node)
        if record is not None:
            self._fenced(node, record, since)
            return
        if since is None:
            if CONFIRM_ANNOTATION in node.annotations and node.ready:
                self.plan.unfences.append(Unfence(node.name, "a person's fence confirmation on a node that is Ready "
                                                             "is stale: removed", taint=False))
            return
        heard = agent_heard(node)
        if heard is not None and self.now - heard < self.settings.agent_silence:
            self.note(node, Seen.KUBELET_SILENT, since,
                      f"its kubelet is silent since {_stamp(since)} but its agent wrote at {_stamp(heard)}: the "
                      f"machine runs, so nothing is fenced; the rules' ladders repair the kubelet")
            self.due(heard + self.settings.agent_silence)
            return
        self.dark[node.name] = since

    def _record(self, node: NodeRecord) -> FenceRecord | None:
        text = node.annotations.get(FENCE_ANNOTATION)
        if text is None:
            return None
        try:
            record = parse_record(text)
        except ContractError as e:
            # Only the remediator may write it (the chart's admission policy): a damaged one is still ours, and the
            # taint it vouched for goes when the node is back, as any fence's does.
            record = FenceRecord(self.now, FenceAction.TAINT, Evidence.PERSON, f"unreadable record: {e}")
        self.records[node.name] = record
        if self.now - record.at < RATE_WINDOW:
            self.rate += 1
        if record.action == FenceAction.REPLACE:
            self.busy[group_of(node, self.policy.repair)] += 1
        return record

    def _fenced(self, node: NodeRecord, record: FenceRecord, since: dt.datetime | None) -> None:
        tainted = any(t.key == OUT_OF_SERVICE_KEY for t in node.taints)
        what = (f"fenced at {_stamp(record.at)} on {record.evidence} evidence ({record.detail})"
                if record.action == FenceAction.TAINT else
                f"its NodeClaim deleted at {_stamp(record.at)} ({record.detail})")
        ready = node.condition("Ready")
        if node.ready and ready is not None:
            back = ready.held_since() or ready.last_transition or self.now
            heard = agent_heard(node)
            if heard is not None and heard >= back:
                self.plan.unfences.append(Unfence(
                    node.name, f"back: Ready since {_stamp(back)} and its agent reported at {_stamp(heard)}; "
                               f"it was {what}", taint=tainted and record.action == FenceAction.TAINT))
            else:
                self.note(node, Seen.RETURNING, None,
                          f"Ready again since {_stamp(back)}; {what}; the out-of-service taint stays until its agent "
                          "reports (a machine that rebooted may not run its pods yet)")
            return
        if record.action == FenceAction.REPLACE:
            self.note(node, Seen.REPLACING, since, f"{what}; the node autoscaler ends the instance and the node, and "
                                                   "the pod garbage collector frees its pods")
        else:
            self.note(node, Seen.FENCED, since, what + ("" if tainted else
                                                       "; the out-of-service taint was taken off by someone else"))

    # --- too many at once ------------------------------------------------------------------------------------------
    def halts(self) -> None:
        """group -> why: a zone (or the cluster) with more than `maxDarkPercent` of its nodes dark."""
        total: Counter[str] = Counter()
        dark: Counter[str] = Counter()
        for name, node in self.snapshot.nodes.items():
            for group in _groups(node):
                total[group] += 1
                dark[group] += name in self.dark
        limit = self.settings.max_dark_percent
        for group, n in sorted(total.items()):
            if dark[group] > DISRUPTED_ABOVE and dark[group] * 100 >= limit * n:
                self.plan.halted[group] = (
                    f"{dark[group]} of {n} nodes in {group} are dark (at least {limit:g}% and more than "
                    f"{DISRUPTED_ABOVE}): the network or the control plane failed, not the machines, so none is fenced")

    def _halted(self, node: NodeRecord) -> str | None:
        return next((self.plan.halted[g] for g in _groups(node) if g in self.plan.halted), None)

    # --- a dark node -----------------------------------------------------------------------------------------------
    def act(self, node: NodeRecord, since: dt.datetime) -> None:
        heard = agent_heard(node)
        witness = (f"its kubelet silent since {_stamp(since)}, its agent since "
                   + (_stamp(heard) if heard is not None else "ever (no agent reports here)"))
        out = opted_out(node, self.policy)
        if out is not None:
            self.note(node, Seen.DARK, since, f"{witness}; nothing is done: {out}")
            return
        halted = self._halted(node)
        if halted is not None:
            self.note(node, Seen.DARK, since, f"{witness}; {halted}", halted=True)
            return
        evidence = self._evidence(node, since)
        if evidence is not None:
            kind, detail = evidence
            if self._rate_allows(node, since, witness):
                self.plan.fences.append(Fence(node.name, kind, detail, self._pods(node)))
                self.note(node, Seen.DARK, since, f"{witness}; fenced now on {kind} evidence ({detail})")
            return
        after = self.settings.replace_after
        if node.claim and after is not None:
            due = since + after
            if self.now >= due:
                self._replace(node, since, witness)
                return
            self.due(due)
            self.note(node, Seen.DARK, since, f"{witness}; its NodeClaim {node.claim} is deleted at {_stamp(due)} "
                                              f"(darkNodes.replaceAfter {format_duration(after)}) unless it returns")
            return
        self.note(node, Seen.DARK, since,
                  f"{witness}; its pods stay: no evidence that the machine is off (no NodeClaim to delete, no reboot "
                  f"the agent confirmed); once it is known off: kubectl nodemedic fence {node.name} --confirm",
                  needs_evidence=True)

    def _evidence(self, node: NodeRecord, since: dt.datetime) -> tuple[Evidence, str] | None:
        confirmed = confirmed_at(node)
        silent = node.condition("Ready")
        stamp = silent.last_transition if silent is not None and silent.last_transition is not None else since
        if confirmed is not None and confirmed >= stamp:
            who = node.annotations[CONFIRM_ANNOTATION].split(" ", 1)[1:]
            return Evidence.PERSON, f"confirmed off at {_stamp(confirmed)}" + (f" {who[0][:120]}" if who else "")
        state = _ladder(node)
        if state is not None and state.action == RepairAction.REBOOT:
            c = node.condition(ANSWER_CONDITION)
            if c is not None and c.reason == AnswerReason.ACTING and answered_id(c.message) == state.id:
                return Evidence.REBOOT, f"the agent began the reboot {state.id} the ladder asked for, then went silent"
        return None

    def _pods(self, node: NodeRecord) -> tuple[str, ...]:
        """The pods a fence frees: every pod bound to the node that has not finished."""
        return tuple(sorted(p.key for p in self.snapshot.pods(node.name) if p.phase not in TERMINAL_PHASES))

    def _rate_allows(self, node: NodeRecord, since: dt.datetime, witness: str) -> bool:
        limit = self.policy.repair.max_per_hour
        if self.rate >= limit:
            self.note(node, Seen.DARK, since, f"{witness}; waits: {self.rate} repair steps and fences in the last "
                                              f"hour (repair.maxPerHour {limit})")
            return False
        self.rate += 1
        return True

    def _replace(self, node: NodeRecord, since: dt.datetime, witness: str) -> None:
        repair = self.policy.repair
        group = group_of(node, repair)
        halted = halted_groups(self.snapshot, repair, self.owned_after)
        if group in halted:
            self.note(node, Seen.DARK, since, f"{witness}; its NodeClaim waits: {halted[group]}", halted=True)
            return
        if self.busy[group] >= repair.max_concurrent:
            self.note(node, Seen.DARK, since, f"{witness}; its NodeClaim waits: {self.busy[group]} node(s) of {group} "
                                              f"being replaced already (repair.maxConcurrent {repair.max_concurrent})")
            return
        if not self._rate_allows(node, since, witness):
            return
        self.busy[group] += 1
        detail = f"dark for {format_duration(whole_seconds(self.now - since))} (darkNodes.replaceAfter)"
        self.plan.claim_deletes.append(ClaimDelete(node.name, node.claim, detail, self._pods(node)))
        self.note(node, Seen.DARK, since, f"{witness}; its NodeClaim {node.claim} deleted now: {detail}")


def _groups(node: NodeRecord) -> list[str]:
    """The groups a partition is counted in: the node's zone (if it has one) and the whole cluster."""
    zone = node.labels.get(ZONE_LABEL)
    return [f"{ZONE_LABEL}={zone}", "cluster"] if zone else ["cluster"]


def _ladder(node: NodeRecord) -> LadderState | None:
    text = node.annotations.get(REPAIR_ANNOTATION)
    if text is None:
        return None
    try:
        return parse_state(text)
    except StateError:
        return None


def _stamp(t: dt.datetime) -> str:
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

