"""descheduler/v1alpha1 DeschedulerPolicy (a `strategies:` map with `params`), which descheduler no longer reads but
most published guides still print: translated into the v1alpha2 form descheduler's own migration gave it, on YAML
nodes.

Each enabled strategy becomes a plugin with the arguments descheduler's migration (v0.29, `strategymigration.go`)
took from its `params`; the top-level evict flags and each strategy's `nodeFit`, `thresholdPriority` and
`thresholdPriorityClassName` become the DefaultEvictor's arguments. descheduler gave every strategy a profile of its
own with its own evictor; nodemedic has one evictor, so strategies that set those differently are an error. A param
a strategy does not take is an error too (descheduler ignored it silently).
"""

from __future__ import annotations

from collections.abc import Callable

import yaml

from remediator.policy.descheduler import DEFAULT_EVICTOR, KIND, V1ALPHA2, Pairs, mapping, scalar, sequence
from remediator.policy.reader import Reader, Section

V1ALPHA1 = "descheduler/v1alpha1"
_TOP_KEYS = ("apiVersion", "kind", "strategies", "nodeSelector", "evictFailedBarePods", "evictLocalStoragePods",
             "evictSystemCriticalPods", "ignorePvcPods", "maxNoOfPodsToEvictPerNode", "maxNoOfPodsToEvictPerNamespace",
             "maxNoOfPodsToEvictTotal")
_EVICTOR_FLAGS = ("evictFailedBarePods", "evictLocalStoragePods", "evictSystemCriticalPods", "ignorePvcPods")
_PASSED_ON = ("nodeSelector", "maxNoOfPodsToEvictPerNode", "maxNoOfPodsToEvictPerNamespace", "maxNoOfPodsToEvictTotal")
_STRATEGY_KEYS = ("enabled", "weight", "params")
_PARAMS_KEYS = ("nodeResourceUtilizationThresholds", "nodeAffinityType", "podsHavingTooManyRestarts", "podLifeTime",
                "removeDuplicates", "failedPods", "includeSoftConstraints", "namespaces", "thresholdPriority",
                "thresholdPriorityClassName", "labelSelector", "nodeFit", "includePreferNoSchedule", "excludedTaints",
                "maxPodLifeTimeSeconds")
_EVICTOR_PARAMS = ("thresholdPriority", "thresholdPriorityClassName", "nodeFit")

Args = Callable[[Reader, Section], Pairs]


def _take(*keys: str, nested: str = "", rename: dict[str, str] | None = None) -> Args:
    """Arguments read from params' `keys` (or from `params[nested]`'s), some under another name."""
    def args(r: Reader, params: Section) -> Pairs:
        source = r.section(params, nested, None) if nested else params
        names = rename or {}
        return [(scalar(names.get(k, k), source.key_nodes[k]), source.values[k]) for k in keys if k in source.values]
    return args


def _both(*parts: Args) -> Args:
    return lambda r, params: [pair for part in parts for pair in part(r, params)]


def _spread_constraints(r: Reader, params: Section) -> Pairs:
    # v1alpha1 knew hard constraints, and soft ones only with includeSoftConstraints; it balanced with node fit.
    where = params.key_nodes.get("includeSoftConstraints", params.where())
    soft = r.flag(params, "includeSoftConstraints", False)
    actions = [scalar("DoNotSchedule", where)] + ([scalar("ScheduleAnyway", where)] if soft else [])
    return [(scalar("constraints", where), sequence(actions, where)),
            (scalar("topologyBalanceNodeFit", where), yaml.ScalarNode("tag:yaml.org,2002:bool", "true",
                                                                       where.start_mark, where.end_mark))]


def _life_time_states(r: Reader, params: Section) -> Pairs:
    # podStatusPhases was merged into states by the migration.
    life = r.section(params, "podLifeTime", ("maxPodLifeTimeSeconds", "states", "podStatusPhases"))
    pairs = _take("maxPodLifeTimeSeconds", nested="podLifeTime")(r, params)
    if "maxPodLifeTimeSeconds" in params.values:
        # The oldest v1alpha1 form, still printed in descheduler guides: the number directly under params.
        where = params.key_nodes["maxPodLifeTimeSeconds"]
        if pairs:
            r.error(where, params.at("maxPodLifeTimeSeconds"), "given twice: here and in podLifeTime; keep "
                                                               "podLifeTime.maxPodLifeTimeSeconds")
        else:
            r.warn(where, params.at("maxPodLifeTimeSeconds"), "deprecated form: descheduler reads it as "
                                                              "params.podLifeTime.maxPodLifeTimeSeconds; move it there")
            pairs = [(scalar("maxPodLifeTimeSeconds", where), params.values["maxPodLifeTimeSeconds"])]
    states = [item for key in ("podStatusPhases", "states") for item, _ in (r.sequence(life, key) or [])]
    if states:
        pairs.append((scalar("states", life.where()), sequence(states, life.where())))
    return pairs


_SCOPE = _take("namespaces", "labelSelector")
_TAINT_PARAMS = ("namespaces", "labelSelector", "includePreferNoSchedule", "excludedTaints")
_UTILIZATION = _take("thresholds", "targetThresholds", "useDeviationThresholds", "numberOfNodes",
                     nested="nodeResourceUtilizationThresholds")
# name -> (descheduler extension point, the params it reads besides the evictor's, how they become its args)
STRATEGIES: dict[str, tuple[str, tuple[str, ...], Args]] = {
    "RemovePodsViolatingNodeTaints": ("deschedule", _TAINT_PARAMS, _take(*_TAINT_PARAMS)),
    "RemoveFailedPods": ("deschedule", ("namespaces", "labelSelector", "failedPods"),
                         _both(_SCOPE, _take("includingInitContainers", "minPodLifetimeSeconds", "excludeOwnerKinds",
                                             "reasons", nested="failedPods"))),
    "RemovePodsViolatingNodeAffinity": ("deschedule", ("namespaces", "labelSelector", "nodeAffinityType"),
                                        _take("namespaces", "labelSelector", "nodeAffinityType")),
    "RemovePodsViolatingInterPodAntiAffinity": ("deschedule", ("namespaces", "labelSelector"), _SCOPE),
    "RemovePodsHavingTooManyRestarts": ("deschedule", ("namespaces", "labelSelector", "podsHavingTooManyRestarts"),
                                        _both(_SCOPE, _take("podRestartThreshold", "includingInitContainers",
                                                            nested="podsHavingTooManyRestarts"))),
    "PodLifeTime": ("deschedule", ("namespaces", "labelSelector", "podLifeTime", "maxPodLifeTimeSeconds"),
                    _both(_SCOPE, _life_time_states)),
    "RemoveDuplicates": ("balance", ("namespaces", "removeDuplicates"),
                         _both(_take("namespaces"), _take("excludeOwnerKinds", nested="removeDuplicates"))),
    "RemovePodsViolatingTopologySpreadConstraint": ("balance", ("namespaces", "labelSelector",
                                                                "includeSoftConstraints"),
                                                    _both(_SCOPE, _spread_constraints)),
    "HighNodeUtilization": ("balance", ("namespaces", "nodeResourceUtilizationThresholds"),
                            _both(_take("namespaces", rename={"namespaces": "evictableNamespaces"}),
                                  _take("thresholds", "numberOfNodes", nested="nodeResourceUtilizationThresholds"))),
    "LowNodeUtilization": ("balance", ("namespaces", "nodeResourceUtilizationThresholds"),
                           _both(_take("namespaces", rename={"namespaces": "evictableNamespaces"}), _UTILIZATION)),
}


def to_v1alpha2(r: Reader, root: yaml.Node) -> yaml.MappingNode:
    """The v1alpha1 document's nodes as a v1alpha2 DeschedulerPolicy with one profile."""
    top = r.mapping(root, "", _TOP_KEYS)
    kind = r.text(top, "kind", required=True)
    if kind and kind != KIND:
        r.error(top.values["kind"], "kind", f"must be {KIND} for apiVersion {V1ALPHA1}, got {kind!r}")
    evictor: Pairs = [(top.key_nodes[k], top.values[k]) for k in _EVICTOR_FLAGS if k in top.values]
    configs: list[yaml.Node] = []
    enabled: dict[str, list[yaml.Node]] = {"deschedule": [], "balance": []}
    chosen: dict[str, tuple[object, str]] = {}  # evictor param -> (value, the strategy that set it)
    strategies = r.section(top, "strategies", None)
    for name, node in strategies.values.items():
        key_node, path = strategies.key_nodes[name], strategies.at(name)
        if name not in STRATEGIES:
            r.error(key_node, path, f"unknown strategy; descheduler's v1alpha1 strategies: {', '.join(STRATEGIES)}")
            continue
        strategy = r.mapping(node, path, _STRATEGY_KEYS)
        if r.flag(strategy, "enabled", False):
            configs.append(_plugin_config(r, name, key_node, r.section(strategy, "params", _PARAMS_KEYS), chosen))
            enabled[STRATEGIES[name][0]].append(key_node)
    evictor += _evictor_params(strategies, chosen)
    if evictor:
        configs.insert(0, mapping([(scalar("name", root), scalar(DEFAULT_EVICTOR, root)),
                                   (scalar("args", root), mapping(evictor, root))], root))
    plugins = mapping([(scalar(point, root), mapping([(scalar("enabled", root), sequence(names, root))], root))
                       for point, names in enabled.items() if names], root)
    profile = mapping([(scalar("name", root), scalar("v1alpha1", root)),
                       (scalar("pluginConfig", root), sequence(configs, root)),
                       (scalar("plugins", root), plugins)], root)
    pairs: Pairs = [(scalar("apiVersion", root), scalar(V1ALPHA2, root)), (scalar("kind", root), scalar(KIND, root)),
                    (scalar("profiles", root), sequence([profile], root))]
    pairs += [(top.key_nodes[k], top.values[k]) for k in _PASSED_ON if k in top.values]
    return mapping(pairs, root)


def _plugin_config(r: Reader, name: str, key_node: yaml.Node, params: Section,
                   chosen: dict[str, tuple[object, str]]) -> yaml.Node:
    """The strategy's pluginConfig entry; its evictor params are collected into `chosen` (which must agree)."""
    _, takes, build = STRATEGIES[name]
    for key in params.values:
        if key not in takes and key not in _EVICTOR_PARAMS:
            r.error(params.key_nodes[key], params.at(key), f"not a parameter of {name} (descheduler ignored it; "
                                                           f"nodemedic does not guess): remove it")
    for key in _EVICTOR_PARAMS:
        if key in params.values:
            value = r.loader.construct_object(params.values[key], deep=True)
            if key in chosen and chosen[key][0] != value:
                r.error(params.values[key], params.at(key), f"differs from {chosen[key][1]}: nodemedic applies one "
                                                            f"evictor to every strategy, so they must agree")
            chosen.setdefault(key, (value, name))
    config: Pairs = [(scalar("name", key_node), key_node)]
    args = build(r, params)
    if args:
        config.append((scalar("args", key_node), mapping(args, key_node)))
    return mapping(config, key_node)


def _evictor_params(strategies: Section, chosen: dict[str, tuple[object, str]]) -> Pairs:
    """The strategies' shared nodeFit and priority threshold as DefaultEvictor arguments."""
    where = strategies.where()
    pairs: Pairs = []
    if "nodeFit" in chosen:
        pairs.append((scalar("nodeFit", where), yaml.ScalarNode("tag:yaml.org,2002:bool",
                                                                str(bool(chosen["nodeFit"][0])).lower(),
                                                                where.start_mark, where.end_mark)))
    threshold: Pairs = []
    if "thresholdPriority" in chosen:
        threshold.append((scalar("value", where), yaml.ScalarNode("tag:yaml.org,2002:int",
                                                                  str(chosen["thresholdPriority"][0]),
                                                                  where.start_mark, where.end_mark)))
    if "thresholdPriorityClassName" in chosen:
        threshold.append((scalar("name", where), scalar(str(chosen["thresholdPriorityClassName"][0]), where)))
    if threshold:
        pairs.append((scalar("priorityThreshold", where), mapping(threshold, where)))
    return pairs
