"""Interim policy loader (minimal); replaced by the full line-precise validator."""

from __future__ import annotations

import datetime as dt
import os
import re
import sys
from typing import Any

import yaml

from remediator.model import Effect, LabelSelector, SelectorRequirement, Taint
from remediator.policy import (
    EvictionSettings,
    EvictorArgs,
    Limits,
    Namespaces,
    Notifications,
    Policy,
    RemovePodsViolatingNodeTaintsArgs,
    Safety,
    SinkConfig,
    StrategyConfig,
    TaintRule,
)


class PolicyError(Exception):
    def __init__(self, errors: list[str]) -> None:
        super().__init__("\n".join(errors))
        self.errors = errors


_DUR = re.compile(r"^(?:(\d+)h)?(?:(\d+)m(?!s))?(?:(\d+)s)?(?:(\d+)ms)?$")


def parse_duration(value: object) -> dt.timedelta:
    if isinstance(value, int | float) and not isinstance(value, bool):
        if value < 0:
            raise ValueError("negative")
        return dt.timedelta(seconds=value)
    m = _DUR.match(str(value)) if value else None
    if not m or not any(m.groups()):
        raise ValueError(f"not a duration: {value!r}")
    h, mi, s, ms = (int(g or 0) for g in m.groups())
    return dt.timedelta(hours=h, minutes=mi, seconds=s, milliseconds=ms)


def _selector(raw: Any) -> LabelSelector | None:
    if raw is None:
        return None
    return LabelSelector(match_labels=tuple(sorted((raw.get("matchLabels") or {}).items())),
                         match_expressions=tuple(SelectorRequirement(e["key"], e["operator"], tuple(e.get("values") or ()))
                                                 for e in raw.get("matchExpressions") or []))


def _ns(raw: Any) -> Namespaces:
    raw = raw or {}
    return Namespaces(include=tuple(raw.get("include") or ()), exclude=tuple(raw.get("exclude") or ()))


def parse_policy(text: str, *, source: str) -> Policy:
    try:
        doc = yaml.safe_load(text)
        if not isinstance(doc, dict):
            raise ValueError("not a mapping")
        rules = []
        for r in doc.get("rules") or []:
            c, t = r["condition"], r["taint"]
            rules.append(TaintRule(
                name=r.get("name") or f"{c['type']}-{c.get('status', 'True')}".lower(),
                condition_type=c["type"], condition_status=str(c.get("status", "True")),
                for_=parse_duration(c.get("for", 0)),
                taint=Taint(t["key"], str(t.get("value", "")), Effect(t.get("effect", "NoSchedule"))),
                evict=bool(r.get("evict", True)), recover_after=parse_duration(r.get("recoverAfter", "5m")),
                allow_no_execute=bool(r.get("allowNoExecute", False))))
        ev = doc.get("evictor") or {}
        evictor = EvictorArgs(
            namespaces=_ns(ev.get("namespaces")), label_selector=_selector(ev.get("labelSelector")),
            node_fit=bool(ev.get("nodeFit", True)), min_replicas=int(ev.get("minReplicas", 0)))
        strategies = tuple(
            StrategyConfig(s["name"], RemovePodsViolatingNodeTaintsArgs(
                namespaces=_ns((s.get("args") or {}).get("namespaces"))))
            for s in doc.get("strategies") or [{"name": "RemovePodsViolatingNodeTaints"}])
        li, e, sa = doc.get("limits") or {}, doc.get("eviction") or {}, doc.get("safety") or {}
        limits = Limits(
            max_pods_to_evict_per_node=li.get("maxNoOfPodsToEvictPerNode", 10),
            max_pods_to_evict_per_namespace=li.get("maxNoOfPodsToEvictPerNamespace"),
            max_pods_to_evict_total=li.get("maxNoOfPodsToEvictTotal", 50),
            owner_cooldown=parse_duration(li.get("ownerCooldown", "5s")))
        eviction = EvictionSettings(retry_deadline=parse_duration(e.get("retryDeadline", "10m")),
                                    initial_backoff=parse_duration(e.get("initialBackoff", "1s")),
                                    max_backoff=parse_duration(e.get("maxBackoff", "30s")))
        safety = Safety(max_tainted_nodes=sa.get("maxTaintedNodes", 3),
                        max_tainted_nodes_percent=sa.get("maxTaintedNodesPercent", 10.0),
                        min_tainted_nodes=sa.get("minTaintedNodes", 1), paused=bool(sa.get("paused", False)))
        no = doc.get("notifications") or {}
        notifications = Notifications(queue_size=no.get("queueSize", 1000), sinks=tuple(
            SinkConfig(type=s["type"], url=s["url"], name=s.get("name") or f"{s['type']}-{i}")
            for i, s in enumerate(no.get("sinks") or [])))
        return Policy(rules=tuple(rules), evictor=evictor, strategies=strategies, limits=limits, eviction=eviction,
                      safety=safety, notifications=notifications)
    except (ValueError, KeyError, TypeError, AttributeError, yaml.YAMLError) as err:
        raise PolicyError([f"{source}: {err}"]) from None


def load_policy(path: str | os.PathLike[str]) -> Policy:
    try:
        text = open(path).read()
    except OSError as e:
        raise PolicyError([f"{path}: {e}"]) from None
    return parse_policy(text, source=str(path))


def validate_main(path: str) -> int:
    try:
        load_policy(path)
    except PolicyError as e:
        print("\n".join(e.errors), file=sys.stderr)
        return 2
    print(f"OK: {path}")
    return 0
