"""The `rules` section: a node condition held for `for` -> a taint nodemedic owns (and maybe evictions)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import yaml

from remediator.model.records import Effect, Taint
from remediator.policy.reader import Reader, Section
from remediator.policy.repair import DISRUPTIVE, DRAINER, RepairStep, read_ladder
from remediator.policy.syntax import label_value_problem, owned_taint_problem, qualified_name_problem

CONDITION_STATUSES = ("True", "False", "Unknown")
_RULE_KEYS = ("name", "condition", "taint", "allowNoExecute", "evict", "recoverAfter", "repair")
_CONDITION_KEYS = ("type", "status", "for")
_TAINT_KEYS = ("key", "value", "effect")
# Far above any real policy (the shipped one has 16); every rule is evaluated on every node each cycle.
MAX_RULES = 1000
# Conditions the kubelet reports on every node, in their healthy status: a rule on one of these matches every
# healthy node at once, so it taints (and drains) the whole cluster up to the breaker's limit.
KUBELET_HEALTHY = {"Ready": "True", "MemoryPressure": "False", "DiskPressure": "False", "PIDPressure": "False",
                   "NetworkUnavailable": "False"}


@dataclass(frozen=True)
class TaintRule:
    """Condition `type` at `status` for at least `for_` -> `taint` on the node (and maybe evictions)."""

    name: str  # unique; defaults to "<type>-<status>" lowercased when the file gives none
    condition_type: str
    condition_status: str  # "True" | "False" | "Unknown"
    for_: dt.timedelta
    taint: Taint
    evict: bool = True
    recover_after: dt.timedelta = dt.timedelta(minutes=5)
    allow_no_execute: bool = False  # NoExecute taints need this explicit opt-in
    repair: tuple[RepairStep, ...] = ()  # the ladder after the drain (policy/repair.py); empty: none


def _taint_key_problem(key: str) -> str | None:
    return qualified_name_problem(key) or owned_taint_problem(key)


def _rule_name_problem(name: str) -> str | None:
    # Rule names are joined with "," in plans, alerts and the owned-taints annotation, so they must not carry one.
    if not name or any(c == "," or c.isspace() for c in name):
        return f"invalid rule name {name!r}: must be non-empty, without spaces or commas"
    return None


@dataclass(frozen=True)
class _ReadRule:
    rule: TaintRule
    path: str
    name_node: yaml.Node  # where to point at a duplicate name (the rule itself when the name is defaulted)
    value_node: yaml.Node  # where to point at a conflicting taint value


def _rule(r: Reader, node: yaml.Node, path: str) -> _ReadRule:
    m = r.mapping(node, path, _RULE_KEYS)
    c = r.section(m, "condition", _CONDITION_KEYS, required=True)
    t = r.section(m, "taint", _TAINT_KEYS, required=True)
    condition_type = r.text(c, "type", required=True)
    status = _condition_status(r, c)
    if KUBELET_HEALTHY.get(condition_type) == status:
        r.error(c.line_node("status", "type"), c.at("status"),
                f"{condition_type}={status} is the kubelet's healthy state, true of every working node: this rule "
                f"would taint them all; match the unhealthy status instead")
    taint = Taint(key=r.text(t, "key", required=True, check=_taint_key_problem),
                  value=r.text(t, "value", check=label_value_problem), effect=Effect.NO_SCHEDULE)
    allow_no_execute = r.flag(m, "allowNoExecute", False)
    effect_text = r.text(t, "effect", str(Effect.NO_SCHEDULE))
    if effect_text not in set(Effect):
        r.error(t.values["effect"], t.at("effect"), "must be one of NoSchedule, PreferNoSchedule, NoExecute "
                f"(NoExecute needs allowNoExecute: true), got {effect_text!r}")
    elif effect_text == Effect.NO_EXECUTE and not allow_no_execute:
        # NoExecute makes the kubelet evict every intolerant pod at once, bypassing PDBs, limits and node fit.
        r.error(t.values["effect"], t.at("effect"),
                "must be one of NoSchedule, PreferNoSchedule (NoExecute needs allowNoExecute: true)")
    else:
        taint = Taint(taint.key, taint.value, Effect(effect_text))
    default_name = f"{condition_type}-{status}".lower()
    rule = TaintRule(
        name=r.text(m, "name", default_name, check=_rule_name_problem),
        condition_type=condition_type,
        condition_status=status,
        for_=r.duration(c, "for", dt.timedelta(0)),
        taint=taint,
        evict=r.flag(m, "evict", TaintRule.evict),
        recover_after=r.duration(m, "recoverAfter", TaintRule.recover_after),
        allow_no_execute=allow_no_execute,
        repair=read_ladder(r, m, effect=taint.effect, condition_type=condition_type),
    )
    return _ReadRule(rule, path, m.line_node("name"), t.line_node("value", "key"))


def _condition_status(r: Reader, c: Section) -> str:
    node = c.values.get("status")
    if node is None:
        return "True"
    got = r.value(node, c.at("status"))
    if isinstance(got, bool):
        # YAML reads a bare True/true/yes as a boolean; the API's condition status is the string "True".
        r.error(node, c.at("status"), f"must be a quoted string (\"{got}\"): bare {node.value} is a YAML boolean")
        return "True"
    if got not in CONDITION_STATUSES:
        r.wrong(node, c.at("status"), f"one of {', '.join(CONDITION_STATUSES)}", got)
        return "True"
    return str(got)


def read_rules(r: Reader, top: Section) -> tuple[TaintRule, ...]:
    items = r.sequence(top, "rules") or []
    if len(items) > MAX_RULES:
        r.error(top.values["rules"], "rules", f"at most {MAX_RULES} rules, got {len(items)}: each is matched against "
                                              "every node every cycle, and each owns a taint")
        return ()
    read = [_rule(r, node, path) for node, path in items]
    names: dict[str, _ReadRule] = {}
    values: dict[tuple[str, str], _ReadRule] = {}
    for rr in read:
        first = names.setdefault(rr.rule.name, rr)
        if first is not rr:
            r.error(rr.name_node, f"{rr.path}.name", f"duplicate rule name {rr.rule.name!r} (also {first.path})")
        if not rr.rule.taint.key:
            continue  # an invalid key is reported already
        owner = values.setdefault(rr.rule.taint.identity(), rr)
        if owner.rule.taint.value != rr.rule.taint.value:
            r.error(rr.value_node, f"{rr.path}.taint.value",
                    f"{rr.rule.taint.value!r} conflicts with {owner.rule.taint.value!r} in {owner.path} for taint "
                    f"{rr.rule.taint.key}:{rr.rule.taint.effect}; a node carries one value per key and effect")
    return tuple(rr.rule for rr in read)


def check_drains(r: Reader, top: Section, rules: tuple[TaintRule, ...], strategies: tuple[str, ...]) -> None:
    """A reboot or a replace waits for the node to be drained, and RemovePodsViolatingNodeTaints is what drains it
    (for the rule's taint, every PDB held): without it such a step would wait forever."""
    if DRAINER in strategies:
        return
    for i, rule in enumerate(rules):
        steps = [j for j, s in enumerate(rule.repair) if s.action in DISRUPTIVE]
        if steps:
            r.error(top.line_node("rules"), f"rules[{i}].repair[{steps[0]}].action",
                    f"{rule.repair[steps[0]].action} drains the node first, through the {DRAINER} strategy, which "
                    "this policy does not run: add it to `strategies`")
