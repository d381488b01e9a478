"""A descheduler `DeschedulerPolicy` (descheduler/v1alpha2) read as it is: translated into nodemedic's own policy tree.

The translation works on YAML nodes, not values: each plugin's `args` and each DefaultEvictor argument is the user's
own node, moved under nodemedic's keys (`strategies[i].args`, `evictor`, `limits`, `eviction`). The ordinary loader
then validates the result with every strategy's own reader, so an error names the user's file and line, and
`nodemedic-remediator convert` writes exactly the policy that was validated. What this module itself checks is what
only a DeschedulerPolicy has: profiles, extension points, the deprecated `metricsCollector`, and the fields
nodemedic cannot honour (each an error saying why, never ignored).

Profiles run in descheduler's order: the deschedule plugins of every profile, then the balance plugins of every
profile. nodemedic has one evictor for every strategy, so profiles must agree on the DefaultEvictor's arguments.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import yaml

from remediator.policy.measured_usage import KUBERNETES_METRICS
from remediator.policy.reader import Reader, Section

V1ALPHA2 = "descheduler/v1alpha2"
KIND = "DeschedulerPolicy"
DEFAULT_EVICTOR = "DefaultEvictor"
_TOP_KEYS = ("apiVersion", "kind", "profiles", "nodeSelector", "maxNoOfPodsToEvictPerNode",
             "maxNoOfPodsToEvictPerNamespace", "maxNoOfPodsToEvictTotal", "evictionFailureEventNotification",
             "metricsCollector", "metricsProviders", "prometheus", "gracePeriodSeconds")
_LIMIT_KEYS = ("maxNoOfPodsToEvictPerNode", "maxNoOfPodsToEvictPerNamespace", "maxNoOfPodsToEvictTotal")
_PROFILE_KEYS = ("name", "pluginConfig", "plugins")
# descheduler decodes through JSON, whose field names match case-insensitively: both spellings occur in the wild.
_EXTENSION_POINTS = {"presort": "preSort", "sort": "sort", "deschedule": "deschedule", "balance": "balance",
                     "filter": "filter", "preevictionfilter": "preEvictionFilter"}
_PLUGIN_SET_KEYS = ("enabled", "disabled")
_EVICTOR_KEYS = ("evictLocalStoragePods", "evictDaemonSetPods", "evictSystemCriticalPods", "evictFailedBarePods",
                 "ignorePvcPods", "priorityThreshold", "labelSelector", "minReplicas", "minPodAge", "nodeFit")
UNSUPPORTED = {
    "prometheus": "not a DeschedulerPolicy field of descheduler v0.36.0: give Prometheus as metricsProviders: "
                  "[{source: Prometheus, prometheus: {url: ..., authToken: ...}}]",
    "namespaceLabelSelector": "not supported; list the namespaces in a plugin's namespaces.include/exclude",
    "noEvictionPolicy": "not supported: nodemedic never evicts a pod annotated descheduler.alpha.kubernetes.io/"
                        "prefer-no-eviction last, but still may; remove the field",
    "ignorePodsWithoutPDB": "not supported: nodemedic may evict a pod no PodDisruptionBudget covers",
}

# podProtections (descheduler's replacement of the evict*/ignore* flags): each protection nodemedic has, as the
# DefaultEvictor argument that turns it off (defaultDisabled) or on (extraEnabled).
_DEFAULT_PROTECTIONS = {"PodsWithLocalStorage": "evictLocalStoragePods", "DaemonSetPods": "evictDaemonSetPods",
                        "SystemCriticalPods": "evictSystemCriticalPods", "FailedBarePods": "evictFailedBarePods"}
_EXTRA_PROTECTIONS = {"PodsWithPVC": "ignorePvcPods", "PodsWithoutPDB": None, "PodsWithResourceClaims": None}
_PROTECTION_UNSUPPORTED = {
    "PodsWithoutPDB": UNSUPPORTED["ignorePodsWithoutPDB"],
    "PodsWithResourceClaims": "not supported: nodemedic's cache keeps no resource claims of pods",
}
_DEPRECATED_FLAGS = ("evictLocalStoragePods", "evictDaemonSetPods", "evictSystemCriticalPods", "evictFailedBarePods",
                     "ignorePvcPods", "ignorePodsWithoutPDB")

_STR, _MAP, _SEQ = "tag:yaml.org,2002:str", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"
_BOOL = "tag:yaml.org,2002:bool"
Pairs = list[tuple[yaml.Node, yaml.Node]]


def scalar(text: str, like: yaml.Node) -> yaml.ScalarNode:
    return yaml.ScalarNode(_STR, text, like.start_mark, like.end_mark)


def mapping(pairs: Pairs, like: yaml.Node) -> yaml.MappingNode:
    return yaml.MappingNode(_MAP, pairs, like.start_mark, like.end_mark)


def sequence(items: Sequence[yaml.Node], like: yaml.Node) -> yaml.SequenceNode:
    return yaml.SequenceNode(_SEQ, list(items), like.start_mark, like.end_mark)


def api_version(root: yaml.Node) -> str | None:
    """The document's apiVersion when it is a plain string at the top of a mapping, else None."""
    if isinstance(root, yaml.MappingNode):
        for key, value in root.value:
            if isinstance(key, yaml.ScalarNode) and key.value == "apiVersion" and isinstance(value, yaml.ScalarNode):
                return str(value.value)
    return None


def translate(r: Reader, root: yaml.Node, *, nodemedic_api: str, nodemedic_kind: str,
              kinds: Mapping[str, str]) -> yaml.MappingNode:
    """A descheduler/v1alpha2 DeschedulerPolicy's nodes as a nodemedic RemediationPolicy's; `kinds`: each registered
    strategy (a descheduler plugin) -> its extension point."""
    top = r.mapping(root, "", _TOP_KEYS)
    kind = r.text(top, "kind", required=True)
    if kind and kind != KIND:
        r.error(top.values["kind"], "kind", f"must be {KIND} for apiVersion {V1ALPHA2}, got {kind!r}")
    for key, why in UNSUPPORTED.items():
        if key in top.values:
            r.error(top.key_nodes[key], key, f"cannot be honoured: {why}")
    if r.flag(top, "evictionFailureEventNotification", True) is False:
        r.error(top.values["evictionFailureEventNotification"], "evictionFailureEventNotification",
                "cannot be false: nodemedic reports every failed eviction (an Event and an alert)")
    evictor, deschedule, balance = _profiles(r, top, kinds)
    pairs: Pairs = [
        (scalar("apiVersion", root), scalar(nodemedic_api, root)),
        (scalar("kind", root), scalar(nodemedic_kind, root)),
        (scalar("rules", root), sequence([], root)),
        (scalar("strategies", root), sequence(deschedule + balance, root)),
        (scalar("evictor", root), mapping(evictor, root)),
        # descheduler's node fit counts only the nodes there are: a pod with no room on one stays, whatever node
        # autoscaler runs. Written out, so `convert` shows it and a user who wants nodemedic's `auto` can say so.
        (scalar("autoscaler", root),
         mapping([(scalar("addsNodes", root), yaml.ScalarNode(_BOOL, "false", root.start_mark, root.end_mark))],
                 root)),
        # descheduler reads the constraints a pod declares, never the scheduler's defaults (its #609, #1502).
        (scalar("scheduler", root), mapping([(scalar("defaultConstraints", root), sequence([], root))], root)),
    ]
    if "nodeSelector" in top.values:  # the same field and string form in both policies
        pairs.append((top.key_nodes["nodeSelector"], top.values["nodeSelector"]))
    limits = [(top.key_nodes[k], top.values[k]) for k in _LIMIT_KEYS if k in top.values]
    if limits:
        pairs.append((scalar("limits", root), mapping(limits, root)))
    providers = _metrics_providers(r, top)
    if providers is not None:
        pairs.append(providers)
    if "gracePeriodSeconds" in top.values:
        pairs.append((scalar("eviction", root),
                      mapping([(top.key_nodes["gracePeriodSeconds"], top.values["gracePeriodSeconds"])], root)))
    return mapping(pairs, root)


def _metrics_providers(r: Reader, top: Section) -> tuple[yaml.Node, yaml.Node] | None:
    """`metricsProviders` as it is, and the deprecated `metricsCollector.enabled: true` as one more
    `{source: KubernetesMetrics}` entry in it (nodemedic's policy has only `metricsProviders`)."""
    collector = r.section(top, "metricsCollector", ("enabled",))
    enabled = r.flag(collector, "enabled", False)
    given = top.values.get("metricsProviders")
    items = list(given.value) if isinstance(given, yaml.SequenceNode) else []
    if enabled:
        listed = [i for i in items if isinstance(i, yaml.MappingNode) and any(
            isinstance(k, yaml.ScalarNode) and k.value == "source" and isinstance(v, yaml.ScalarNode)
            and v.value == KUBERNETES_METRICS for k, v in i.value)]
        if listed:
            r.error(collector.values["enabled"], collector.at("enabled"),
                    f"not together with metricsProviders' source {KUBERNETES_METRICS} (descheduler refuses both)")
        else:
            like = collector.values["enabled"]
            items.append(mapping([(scalar("source", like), scalar(KUBERNETES_METRICS, like))], like))
    if given is not None and not isinstance(given, yaml.SequenceNode):
        return top.key_nodes["metricsProviders"], given  # not a list: the loader says so, at its line
    if not items:
        return None
    key = top.key_nodes.get("metricsProviders") or top.key_nodes["metricsCollector"]
    return scalar("metricsProviders", key), sequence(items, given if given is not None else key)


def _profiles(r: Reader, top: Section, kinds: Mapping[str, str]) -> tuple[Pairs, list[yaml.Node], list[yaml.Node]]:
    """(DefaultEvictor arguments, deschedule strategy entries, balance strategy entries) over every profile."""
    evictor: Pairs | None = None
    evictor_value: object = None
    evictor_from = ""
    entries: dict[str, list[yaml.Node]] = {"deschedule": [], "balance": []}
    seen: dict[str, str] = {}
    for node, path in r.sequence(top, "profiles") or []:
        profile = r.mapping(node, path, _PROFILE_KEYS)
        r.text(profile, "name", required=True)
        configs = _plugin_configs(r, profile, kinds)
        args_pairs, value = _default_evictor(r, configs.get(DEFAULT_EVICTOR))
        if evictor is None:
            evictor, evictor_value, evictor_from = args_pairs, value, path
        elif value != evictor_value:
            where = configs.get(DEFAULT_EVICTOR, profile)
            r.error(where.where(), where.path, f"DefaultEvictor arguments differ from those of {evictor_from}: "
                                               "nodemedic applies one evictor to every strategy, so profiles must "
                                               "agree on them")
        points = _extension_points(r, profile)
        for point in ("deschedule", "balance"):
            for name_node, name, at in points.get(point, []):
                entry = _strategy_entry(r, name_node, name, at=at, point=point, kinds=kinds, configs=configs,
                                        seen=seen)
                if entry is not None:
                    entries[point].append(entry)
    return evictor or [], entries["deschedule"], entries["balance"]


def _plugin_configs(r: Reader, profile: Section, kinds: Mapping[str, str]) -> dict[str, Section]:
    out: dict[str, Section] = {}
    for node, path in r.sequence(profile, "pluginConfig") or []:
        config = r.mapping(node, path, ("name", "args"))
        name = r.text(config, "name", required=True)
        if not name:
            continue
        if name in out:
            r.error(config.values["name"], config.at("name"), f"duplicate pluginConfig {name!r} in this profile")
        elif name != DEFAULT_EVICTOR and name not in kinds:
            r.error(config.values["name"], config.at("name"),
                    f"unknown plugin {name!r}; nodemedic has {DEFAULT_EVICTOR}, {', '.join(sorted(kinds))}")
        else:
            out[name] = config
    return out


def _default_evictor(r: Reader, config: Section | None) -> tuple[Pairs, object]:
    """The DefaultEvictor's supported arguments as (key, value) node pairs, and their values to compare profiles."""
    if config is None:
        return [], {}
    args = r.section(config, "args", None)
    pairs: Pairs = []
    for key, value in args.values.items():
        if key == "podProtections":
            flags = [k for k in _DEPRECATED_FLAGS if k in args.values]
            if flags:  # descheduler's own validation refuses the mix
                r.error(args.key_nodes[key], args.at(key), f"cannot be used with the deprecated {', '.join(flags)}")
            pairs.extend(_protections(r, args))
        elif key in UNSUPPORTED:
            r.error(args.key_nodes[key], args.at(key), f"cannot be honoured: {UNSUPPORTED[key]}")
        elif key not in _EVICTOR_KEYS:
            r.error(args.key_nodes[key], args.at(key), f"unknown DefaultEvictor argument; valid: "
                                                        f"{', '.join(_EVICTOR_KEYS)}")
        else:
            pairs.append((args.key_nodes[key], value))
    return pairs, {k.value: r.loader.construct_object(v, deep=True) for k, v in pairs}


def _protections(r: Reader, args: Section) -> Pairs:
    """podProtections as the equivalent DefaultEvictor flags (`true` nodes at the protection's own line), and
    PodsWithPVC's storage classes as `protectedStorageClasses`."""
    m = r.section(args, "podProtections", ("defaultDisabled", "extraEnabled", "config"))
    pairs: Pairs = []
    for key, known in (("defaultDisabled", _DEFAULT_PROTECTIONS), ("extraEnabled", _EXTRA_PROTECTIONS)):
        seen: set[str] = set()
        for node, path in r.sequence(m, key) or []:
            name = r.value(node, path)
            if not isinstance(name, str) or name not in known:
                r.error(node, path, f"must be one of {', '.join(known)}, got {name!r}")
            elif name in seen:
                r.error(node, path, f"{name} is listed twice")
            elif (flag := known[name]) is None:
                r.error(node, path, f"cannot be honoured: {_PROTECTION_UNSUPPORTED[name]}")
            else:
                seen.add(name)
                pairs.append((scalar(flag, node), yaml.ScalarNode(_BOOL, "true", node.start_mark, node.end_mark)))
    config = r.section(m, "config", ("PodsWithPVC",))
    pvc = r.section(config, "PodsWithPVC", ("protectedStorageClasses",))
    names: list[yaml.Node] = []
    for node, path in r.sequence(pvc, "protectedStorageClasses") or []:
        item = r.mapping(node, path, ("name",))
        if r.text(item, "name", required=True):
            names.append(item.values["name"])
    if names:
        if not any(k.value == "ignorePvcPods" for k, _ in pairs):  # descheduler would ignore them: say so
            r.error(pvc.where(), pvc.path, "applies only with PodsWithPVC in extraEnabled")
        at = pvc.key_nodes["protectedStorageClasses"]
        pairs.append((scalar("protectedStorageClasses", at), yaml.SequenceNode(_SEQ, names, at.start_mark,
                                                                               at.end_mark)))
    return pairs


def _extension_points(r: Reader, profile: Section) -> dict[str, list[tuple[yaml.Node, str, str]]]:
    """Extension point -> its enabled plugins (name node, name, path), `disabled` taken out; unsupported points
    and filters other than DefaultEvictor are errors."""
    plugins = r.section(profile, "plugins", None)
    out: dict[str, list[tuple[yaml.Node, str, str]]] = {}
    for key in plugins.values:
        point = _EXTENSION_POINTS.get(key.lower())
        if point is None:
            r.error(plugins.key_nodes[key], plugins.at(key),
                    f"unknown extension point; valid: {', '.join(_EXTENSION_POINTS.values())}")
            continue
        plugin_set = r.section(plugins, key, _PLUGIN_SET_KEYS)
        enabled = _names(r, plugin_set, "enabled")
        disabled = {name for _, name, _ in _names(r, plugin_set, "disabled")}
        if point in ("filter", "preEvictionFilter"):
            for node, name, at in enabled:
                if name != DEFAULT_EVICTOR:
                    r.error(node, at, f"cannot be honoured: nodemedic's only {point} plugin is {DEFAULT_EVICTOR}")
            if DEFAULT_EVICTOR in disabled or "*" in disabled:
                r.error(plugin_set.values["disabled"], plugin_set.at("disabled"),
                        f"cannot be honoured: nodemedic always applies {DEFAULT_EVICTOR} (its safety filters)")
        elif point in ("preSort", "sort"):
            if enabled:
                r.error(enabled[0][0], enabled[0][2], "cannot be honoured: nodemedic orders evictions itself "
                                                      "(descheduler's default order, see docs/utilization.md)")
        else:
            out[point] = [(n, name, at) for n, name, at in enabled if name not in disabled and "*" not in disabled]
    return out


def _names(r: Reader, plugin_set: Section, key: str) -> list[tuple[yaml.Node, str, str]]:
    out = []
    for node, path in r.sequence(plugin_set, key) or []:
        name = r.value(node, path)
        if isinstance(name, str) and name:
            out.append((node, name, path))
        else:
            r.wrong(node, path, "a plugin name", name)
    return out


def _strategy_entry(r: Reader, name_node: yaml.Node, name: str, *, at: str, point: str, kinds: Mapping[str, str],
                    configs: dict[str, Section], seen: dict[str, str]) -> yaml.Node | None:
    """nodemedic's `strategies` item for one enabled plugin: its name and its pluginConfig's args node."""
    kind = kinds.get(name)
    if kind is None:
        r.error(name_node, at, f"unknown {point} plugin {name!r}; nodemedic has {', '.join(sorted(kinds))}")
        return None
    if kind != point:
        r.error(name_node, at, f"{name} is a {kind} plugin, not a {point} one")
        return None
    if name in seen:
        r.error(name_node, at, f"{name} is enabled twice (also {seen[name]}): nodemedic runs each strategy once")
        return None
    seen[name] = at
    pairs: Pairs = [(scalar("name", name_node), name_node)]
    config = configs.get(name)
    if config is not None and "args" in config.values:
        pairs.append((config.key_nodes["args"], config.values["args"]))
    return mapping(pairs, name_node)
