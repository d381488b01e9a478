"""Repair after the drain: a rule's ladder (`rules[].repair`) and the `repair` section's rails.

A ladder is the steps that follow a rule's taint, in order, each with how long to wait for the condition to clear
before the next: restart a node service or reboot the node (both by the agent on that node), replace the node
(through the node autoscaler that owns it), hand it to a person (the last step: nodemedic stops there). Reboot and
replace drain the node first, every PDB held; restart does not (the pods keep running through it).

`read_ladder` (called by rules.py for each rule) and `read_repair` (the loader's section) validate them; the
defaults, floors and refusals are documented in docs/repair.md#validation.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from nodemedic_common.durations import format_duration
from nodemedic_common.repair_contract import SERVICES, RepairAction
from remediator.model.records import Effect, LabelSelector
from remediator.policy.fields import read_label_selector
from remediator.policy.reader import Reader, Section
from remediator.policy.syntax import qualified_name_problem
from remediator.policy.window import MaintenanceWindow, read_window_at

DISRUPTIVE = (RepairAction.REBOOT, RepairAction.REPLACE)
# Node labels that name a node's pool, in the order they are looked for; a node with none is grouped by its zone,
# and a node without a zone is in one cluster-wide group.
POOL_LABELS = ("karpenter.sh/nodepool", "eks.amazonaws.com/nodegroup", "cloud.google.com/gke-nodepool",
               "kubernetes.azure.com/agentpool", "node.kubernetes.io/instance-group")
ZONE_LABEL = "topology.kubernetes.io/zone"
DRAINER = "RemovePodsViolatingNodeTaints"  # the strategy that drains a node for its rule's taint


@dataclass(frozen=True)
class RepairStep:
    action: RepairAction
    wait: dt.timedelta  # after the step started: how long the condition may persist before the next step
    service: str = ""  # restart only: one of nodemedic_common.repair_contract.SERVICES

    def describe(self) -> str:
        return f"{self.action} {self.service}" if self.service else str(self.action)


@dataclass(frozen=True)
class RepairSettings:
    """The `repair` section: how many nodes are repaired at once, how often, when, and when not at all."""

    max_concurrent: int = 1  # nodes in repair at once per group (pool, else zone)
    max_per_hour: int = 6  # steps that act on a node (restart, reboot, replace) started per hour, cluster-wide
    max_unhealthy_percent: float = 20.0  # of a group: past it (and past one node), nothing in the group is repaired
    window: MaintenanceWindow = field(default_factory=MaintenanceWindow)  # for reboot and replace only
    blocking_pod_selector: LabelSelector | None = None  # no reboot or replace while such a pod runs on the node
    pool_labels: tuple[str, ...] = POOL_LABELS


# --- reading: `rules[].repair` ---------------------------------------------------------------------------------------

_STEP_KEYS = ("action", "service", "wait")
_SETTINGS_KEYS = ("maxConcurrent", "maxPerHour", "maxUnhealthyPercent", "window", "blockingPodSelector", "poolLabels")
ACTIONS = tuple(a.value for a in RepairAction)
MAX_STEPS = 8  # restart, restart, reboot, replace, person is already a long ladder; a longer one is a loop
# A step's `wait` when the file gives none: long enough for the condition to clear after the action, short enough
# that a node that did not heal is not left out of service for long.
DEFAULT_WAITS = {
    RepairAction.RESTART: dt.timedelta(minutes=5),
    RepairAction.REBOOT: dt.timedelta(minutes=15),
    RepairAction.REPLACE: dt.timedelta(minutes=30),
}
# The shortest `wait` after each action, and why: the condition needs time to clear after the action, and a shorter
# wait takes the next (more disruptive) step on a node that was healing (docs/bounds.md).
WAIT_FLOORS = {
    RepairAction.RESTART: (dt.timedelta(minutes=1), "the service must come back and the agent's check pass again "
                                                    "before the condition clears"),
    RepairAction.REBOOT: (dt.timedelta(minutes=2), "a node needs minutes to boot, rejoin the cluster and have its "
                                                   "checks clear the condition"),
    RepairAction.REPLACE: (dt.timedelta(minutes=10), "the node autoscaler needs minutes to drain and delete the node "
                                                     "and bring up its replacement"),
}
MAX_WAIT = dt.timedelta(hours=24)
READY = "Ready"  # the kubelet's own condition: a node gone dark, not a ladder's to reboot or replace
MAX_CONCURRENT = 1000
MAX_PER_HOUR = 10000


def _action_problem(text: str) -> str | None:
    return None if text in ACTIONS else f"unknown action {text!r}; must be one of {', '.join(ACTIONS)}"


def _service_problem(name: str) -> str | None:
    if name in SERVICES:
        return None
    return (f"unknown service {name!r}; a restart names one of {', '.join(SERVICES)} (the services the agent can "
            "restart; the container runtime by its own name)")


def _service(r: Reader, s: Section, action: RepairAction) -> str:
    if action != RepairAction.RESTART:
        if "service" in s.values:
            r.error(s.values["service"], s.at("service"), f"only a restart names a service, not a {action} (a "
                                                          f"{action} is of the whole node)")
        return ""
    if "service" not in s.values:
        r.error(s.where(), s.at("service"), f"a restart needs the service to restart: one of {', '.join(SERVICES)}")
        return ""
    return r.text(s, "service", required=True, check=_service_problem)


def _wait(r: Reader, s: Section, action: RepairAction) -> dt.timedelta:
    if action == RepairAction.PERSON:
        if "wait" in s.values:
            r.error(s.values["wait"], s.at("wait"), "a person step has no wait: it is the last step, and nodemedic "
                                                    "stops there until the condition clears or a person acts")
        return dt.timedelta(0)
    default = DEFAULT_WAITS[action]
    wait = r.duration(s, "wait", default, floor=WAIT_FLOORS[action])
    if wait > MAX_WAIT:
        r.error(s.values["wait"], s.at("wait"),
                f"must be at most {format_duration(MAX_WAIT)} (a step that has not worked in a day will not; a "
                f"longer wait only keeps the node out of service before the next step), got {format_duration(wait)}")
        return default
    return wait


def _step(r: Reader, s: Section, *, effect: Effect, condition_type: str) -> RepairStep | None:
    text = r.text(s, "action", required=True, check=_action_problem)
    if not text:
        return None
    action = RepairAction(text)
    where = s.line_node("action")
    if action in DISRUPTIVE and effect == Effect.PREFER_NO_SCHEDULE:
        r.error(where, s.at("action"),
                f"a {action} needs the node drained first, and a PreferNoSchedule taint does not keep new pods off it "
                f"between the drain and the {action} (pods would go with the node undrained); use effect NoSchedule "
                "or only restart and person steps")
    if action in DISRUPTIVE and condition_type == READY:
        r.error(where, s.at("action"),
                f"no {action} on the kubelet's Ready condition: a node that is not Ready has gone dark (its agent may "
                "not answer, and the node lifecycle controller evicts its pods); a ladder there may restart the "
                "kubelet or call a person")
    service = _service(r, s, action)
    return RepairStep(action=action, wait=_wait(r, s, action), service=service)


def read_ladder(r: Reader, rule: Section, *, effect: Effect, condition_type: str) -> tuple[RepairStep, ...]:
    """A rule's `repair` list; `effect` and `condition_type` are the rule's own (a reboot or replace needs a taint that
    keeps the node empty, and is not for Ready). Absent, null or empty: no ladder."""
    items = r.sequence(rule, "repair")
    if not items:
        return ()
    if len(items) > MAX_STEPS:
        r.error(rule.values["repair"], rule.at("repair"),
                f"at most {MAX_STEPS} steps, got {len(items)}: a ladder that long repeats itself; end it with person")
        return ()
    steps: list[RepairStep] = []
    seen: dict[tuple[RepairAction, str], str] = {}
    person: str | None = None
    for node, path in items:
        s = r.mapping(node, path, _STEP_KEYS)
        step = _step(r, s, effect=effect, condition_type=condition_type)
        if step is None or (step.action == RepairAction.RESTART and not step.service):
            continue  # its error is reported; a restart of no service is no step to compare
        first = seen.setdefault((step.action, step.service), path)
        if person is not None:
            r.error(s.line_node("action"), s.at("action"), f"a step after person ({person}) never runs: nodemedic "
                                                           "stops at person; put person last")
        elif first != path:
            r.error(s.line_node("action"), s.at("action"), f"{step.describe()} is already {first}: the same step "
                                                           "again does what it did; give that one a longer wait")
        if step.action == RepairAction.PERSON and person is None:
            person = path
        steps.append(step)
    return tuple(steps)


# --- reading: the `repair` section ------------------------------------------------------------------------------------

def _percent_above_zero(r: Reader, m: Section, key: str, default: float) -> float:
    node = m.values.get(key)
    if node is None:
        return default
    got = r.value(node, m.at(key))
    if isinstance(got, bool) or not isinstance(got, int | float):
        r.wrong(node, m.at(key), "a number above 0 and at most 100", got)
        return default
    if not 0 < got <= 100:  # also refuses .nan
        r.error(node, m.at(key), f"must be above 0 and at most 100, got {got}")
        return default
    return float(got)


def _blocking_pod_selector(r: Reader, m: Section) -> LabelSelector | None:
    errors = len(r.errors)
    selector = read_label_selector(r, m, "blockingPodSelector")
    if selector == LabelSelector() and len(r.errors) == errors:
        r.error(m.values["blockingPodSelector"], m.at("blockingPodSelector"),
                "an empty selector matches every pod, DaemonSet pods included (they stay through a drain), so no "
                "node would ever be rebooted or replaced; leave it out for none")
        return None
    return selector


def _pool_labels(r: Reader, m: Section) -> tuple[str, ...]:
    labels = r.strings(m, "poolLabels", qualified_name_problem)
    if labels is None:
        return POOL_LABELS
    for twice in sorted({k for k in labels if labels.count(k) > 1}):
        r.error(m.values["poolLabels"], m.at("poolLabels"), f"{twice!r} given twice")
    return labels


def read_repair(r: Reader, top: Section) -> RepairSettings:
    """The `repair` section; absent or null: every default (a policy with ladders and no section gets these)."""
    m = r.section(top, "repair", _SETTINGS_KEYS)
    d = RepairSettings()
    return RepairSettings(
        max_concurrent=r.integer(m, "maxConcurrent", d.max_concurrent, minimum=1, maximum=MAX_CONCURRENT),
        max_per_hour=r.integer(m, "maxPerHour", d.max_per_hour, minimum=1, maximum=MAX_PER_HOUR),
        max_unhealthy_percent=_percent_above_zero(r, m, "maxUnhealthyPercent", d.max_unhealthy_percent),
        window=read_window_at(r, m, "window"),
        blocking_pod_selector=_blocking_pod_selector(r, m),
        pool_labels=_pool_labels(r, m),
    )

