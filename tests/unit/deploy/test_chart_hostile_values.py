"""Every string the chart's values allow, set to hostile text, either is refused by helm or lands in the rendered
objects as exactly that string, where it was put: no extra key, argument, container or object, no text cut at a
`#`, no `on` turned into a boolean. The string values are found by walking values.schema.json, so a value added to
the chart is covered without touching this file. Needs the pinned helm (fails, never skips)."""

from __future__ import annotations

import copy
import functools
import itertools
import json
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from hack import manifests

SCHEMA: dict[str, Any] = json.loads((manifests.CHART / "values.schema.json").read_text())
KEY, VALUE = "<key>", "<value>"  # path segments: a map's (one) key, and the value under it
Path_ = tuple[str | int, ...]

# Text that broke out of an unquoted insertion: newlines with indentation (a new key or list item), other line
# breaks and control characters; mapping, comment, flow and other indicators inside a string and at its start;
# leading spaces; and plain words YAML 1.1 reads as a boolean, a number or null. (U+0085 is left out: helm's own
# toYaml turns it into a space, whatever the template.)
HOSTILE = [
    "x\n  injected: true\r- --dry-run=false\u2028\t\x00",
    "team: payments #2 \"q' [a] {b}, &c *d !e |f >g %h @i `j ?k",
    "  - &a *b !c |d >e %f @g `h ?i: #j",
    "on",
    "1e3",
    "null",
]
# The file contents the ConfigMaps carry: a first line that starts with spaces, a document marker, line breaks
# other than "\n", whitespace around, what a block scalar's header would take.
HOSTILE_FILES = [
    *HOSTILE,
    "  # indented first line\nrules: []\n",
    "a: 1\n---\nkind: Secret\n",
    "{}\rkind: Secret",
    "x\u2028kind: Secret\ty",
    "\n\n  \t\nlast line with trailing spaces   \n\n",
    "|\n  x",
    "\ttab first\n",
]
FILES: dict[Path_, str] = {("agent", "config"): "agent.yaml", ("remediator", "policy"): "policy.yaml",
                           ("agent", "extraFiles", VALUE): "<its key slot's placeholder>"}
POLICY = "rules:\n- condition: {type: KernelDeadlock}\nscheduler: {profile: second}\n"
BASE: dict[str, Any] = {
    "namespace": {"create": True},
    "serviceMonitor": {"enabled": True}, "prometheusRule": {"enabled": True},
    "grafanaDashboard": {"enabled": True}, "secondScheduler": {"enabled": True},
    "remediator": {"policy": POLICY, "topologySpreadConstraints": [{"maxSkew": 1}]},
    "agent": {"config": "heartbeat: 5m\n"},
}
MODES = ("deployment", "cronjob")
DROPPED_ANNOTATIONS = ("checksum/config", "nodemedic.io/policy-sha256")  # hashes of the rendered text


@pytest.fixture(autouse=True, scope="module")
def helm() -> Path:
    try:
        return manifests.helm()
    except manifests.HelmMissing as e:
        pytest.fail(f"{e}; the chart tests need it and never skip", pytrace=False)


# --- the schema's string values --------------------------------------------------------------------------------
def resolve(node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = {**SCHEMA["definitions"][node["$ref"].rsplit("/", 1)[1]],
                **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def accepts(node: dict[str, Any], s: str) -> bool:
    """The schema node takes the string s (the subset of JSON Schema values.schema.json uses)."""
    node = resolve(node)
    types = node.get("type")
    if types is not None and "string" not in (types if isinstance(types, list) else [types]):
        return False
    if "enum" in node and s not in node["enum"]:
        return False
    if "pattern" in node and not re.search(node["pattern"], s):
        return False
    if len(s) > node.get("maxLength", len(s)) or len(s) < node.get("minLength", 0):
        return False
    if "oneOf" in node and sum(accepts(n, s) for n in node["oneOf"]) != 1:
        return False
    return all(accepts(n, s) for n in node.get("allOf", []))


def takes_strings(node: dict[str, Any]) -> bool:
    node = resolve(node)
    types = node.get("type")
    if any(takes_strings(n) for n in node.get("oneOf", []) + node.get("anyOf", [])):
        return True
    if any(takes_strings(n) for n in node.get("allOf", [])):
        return True
    return types == "string" or (isinstance(types, list) and "string" in types)


def string_slots(node: dict[str, Any], path: Path_ = ()) -> Iterator[tuple[Path_, dict[str, Any]]]:
    """(path, schema node) of every place values.yaml may hold a string: properties, array items, map keys and
    map values, at any depth."""
    node = resolve(node)
    for key, sub in node.get("properties", {}).items():
        if key != "global":
            yield from string_slots(sub, (*path, key))
    if isinstance(node.get("items"), dict):
        yield from string_slots(node["items"], (*path, 0))
    for pattern, sub in node.get("patternProperties", {}).items():  # a map whose keys must match a pattern
        yield (*path, KEY), {"type": "string", "pattern": pattern}
        yield from string_slots(sub, (*path, VALUE))
    if isinstance(node.get("additionalProperties"), dict):
        yield (*path, KEY), node.get("propertyNames", {"type": "string"})
        yield from string_slots(node["additionalProperties"], (*path, VALUE))
    if takes_strings(node):
        yield path, node


SLOTS = dict(string_slots(SCHEMA))


def placeholder(n: int, path: Path_, node: dict[str, Any]) -> str:
    """A value the schema takes at path, found nowhere else in the rendering: where it shows, the value went."""
    base = dig(BASE, path)
    candidates = [base] if isinstance(base, str) else []
    candidates += [*resolve(node).get("enum", []), f"zq{n}x", f"/zq{n}x", f"{9000 + n}s", f"{9000 + n}%",
                   f"10.{n}.71.9/32"]
    found = [c for c in candidates if accepts(node, c)]
    assert found, f"no placeholder the schema takes at {path}: add a candidate"
    return found[0]


def dig(values: Any, path: Path_) -> Any:
    for seg in path:
        if isinstance(values, dict) and seg in values:
            values = values[seg]
        else:
            return None
    return values


PLACEHOLDERS = {path: FILES.get(path) or placeholder(n, path, node) for n, (path, node) in enumerate(SLOTS.items())}
FREE = [p for p in SLOTS if p not in FILES and "enum" not in resolve(SLOTS[p])]  # enums: every hostile is refused


@dataclass(frozen=True)
class Rendering:
    docs: list[dict[str, Any]] | None
    error: str


def values_for(assigned: dict[Path_, str], mode: str) -> dict[str, Any]:
    """The values with every slot at its assigned string (its placeholder unless assigned), in the given mode."""
    values = copy.deepcopy(BASE)
    for path in SLOTS:
        if path[-1] == KEY:
            continue
        text = assigned.get(path, PLACEHOLDERS[path])
        if path in FILES and path not in assigned:
            text = "a: 1\n" if path[-1] == VALUE else dig(BASE, path)
        if path[-1] == VALUE:  # the map holds one key: its key slot's string
            put(values, path[:-1], {assigned.get((*path[:-1], KEY), PLACEHOLDERS[(*path[:-1], KEY)]): text})
        else:
            put(values, path, text)
    values["remediator"]["mode"] = mode  # an enum: its slot's placeholder is the first choice
    return values


def put(values: dict[str, Any], path: Path_, value: Any) -> None:
    """Set values at path, making the maps and one-item lists on the way (a list's item is segment 0)."""
    node: Any = values
    for seg, nxt in itertools.pairwise(path):
        if seg == 0:
            node = node[0]
            continue
        if not node.get(seg):
            node[seg] = [{}] if nxt == 0 else {}
        node = node[seg]
    if path[-1] == 0:
        node[:] = [value]
    else:
        node[path[-1]] = value


def render(values: dict[str, Any]) -> Rendering:
    return _render(json.dumps(values))


@functools.cache
def _render(values: str) -> Rendering:
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        f.write(values)
        f.flush()
        try:
            out = manifests.run_helm("template", "rel", str(manifests.CHART), "-n", "ns", "-f", f.name)
        except RuntimeError as e:
            return Rendering(None, str(e))
    docs = [d for d in yaml.safe_load_all(out) if d]
    for d in docs:
        for spec in (d.get("spec", {}).get("template", {}), d.get("spec", {}).get("jobTemplate", {}).get(
                "spec", {}).get("template", {})):
            for name in DROPPED_ANNOTATIONS:
                spec.get("metadata", {}).get("annotations", {}).pop(name, None)
    return Rendering(docs, "")


def substitute(node: Any, by: dict[str, str]) -> Any:
    """node with every placeholder in its strings (keys too) replaced by what was set in its place."""
    if isinstance(node, str):
        for old, new in by.items():
            node = node.replace(old, new)
        return node
    if isinstance(node, dict):
        return {substitute(k, by): substitute(v, by) for k, v in node.items()}
    if isinstance(node, list):
        return [substitute(v, by) for v in node]
    return node


def pointer(path: Path_) -> str:
    """The JSON pointer helm's schema errors name the slot by; a map value's ends in "/" (its map holds one key,
    whichever it is)."""
    if path[-1] == VALUE:
        return pointer(path[:-1]) + "/"
    return "/" + "/".join(str(seg) for seg in path)


def refused_slots(error: str, assigned: dict[Path_, str]) -> set[Path_]:
    """The assigned slots helm's error names: schema errors by their pointer (a map key at its map's), the chart's
    own `fail` by the value's dotted name at the start of its message."""
    at = set(re.findall(r"^\s*- at '([^']*)'", error, re.M))
    hit = {p for p in assigned if any(
        a == pointer(p[:-1] if p[-1] == KEY else p) or (p[-1] == VALUE and a.startswith(pointer(p))) for a in at)}
    return hit | {p for p in assigned
                  if ".".join(str(seg) for seg in p if seg not in (KEY, VALUE, 0)) + ": " in error}


def hostile_render(text: str, mode: str, slots: list[Path_]) -> tuple[Rendering, dict[Path_, str], set[Path_]]:
    """Every slot set to text; a slot the schema refuses gets its placeholder followed by text instead (a path or a
    name that must start well), and its bare placeholder when that is refused too. Returns the rendering, what each
    slot held, and the slots refused outright."""
    assigned = dict.fromkeys(slots, text)
    refused: set[Path_] = set()
    for _ in range(8):
        r = render(values_for(assigned, mode))
        if r.docs is not None:
            return r, assigned, refused
        hit = refused_slots(r.error, assigned)
        assert hit, f"helm refused {text!r} in {mode} mode, naming no value it was given:\n{r.error}"
        for p in hit:
            if assigned[p] == text:
                assigned[p] = PLACEHOLDERS[p] + text
            else:
                refused.add(p)
                del assigned[p]
    raise AssertionError(f"{text!r}: still refused after falling back to placeholders:\n{r.error}")


def test_the_schema_walk_finds_the_values_the_issue_names() -> None:
    for path in [("image", "tag"), ("image", "repository"), ("clusterName",), ("agent", "priorityClassName"),
                 ("agent", "hostRoot"), ("agent", "extraArgs", 0), ("agent", "podLabels", KEY),
                 ("imagePullSecrets", 0, "name"), ("remediator", "topologySpreadConstraints", 0, "topologyKey"),
                 ("remediator", "policy"), ("secondScheduler", "image", "tag")]:
        assert path in SLOTS, path
    assert len(FREE) > 40, len(FREE)


@pytest.mark.parametrize("mode", MODES)
def test_every_placeholder_lands_in_the_rendering(mode: str) -> None:
    """The comparison below means something only where each value shows up in some mode's objects."""
    base = render(values_for({}, mode))
    assert base.docs is not None, base.error
    other = render(values_for({}, MODES[1 - MODES.index(mode)]))
    text = json.dumps(base.docs) + json.dumps(other.docs)
    assert [p for p in FREE if PLACEHOLDERS[p] not in text] == []


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("text", HOSTILE, ids=[ascii(h)[1:-1][:24] for h in HOSTILE])
def test_a_hostile_string_in_any_value_is_refused_or_rendered_as_exactly_that_string(text: str, mode: str) -> None:
    base = render(values_for({}, mode))
    assert base.docs is not None, base.error
    got, assigned, refused = hostile_render(text, mode, FREE)
    expected = substitute(base.docs, {PLACEHOLDERS[p]: v for p, v in assigned.items()})
    assert got.docs == expected, f"{text!r}: the rendering differs from the placeholders' beyond the value itself"
    # Not vacuous: free text keeps it, quoted, where it was put.
    if "\n" not in text and "\r" not in text and "\x00" not in text:
        assert ("clusterName",) in assigned and ("remediator", "podAnnotations", VALUE) in assigned
    assert refused <= set(FREE)


@pytest.mark.parametrize("text", HOSTILE_FILES, ids=[ascii(h)[1:-1][:24] for h in HOSTILE_FILES])
def test_a_hostile_file_lands_in_its_configmap_as_exactly_its_text(text: str) -> None:
    """The agent config, the policy and an extra file: each ConfigMap key holds the text (without leading and
    trailing blank lines and without whitespace on blank lines, as the chart writes every file), and nothing else
    changes shape: the same objects, each ConfigMap with only its data."""
    values = values_for(dict.fromkeys(FILES, text), "deployment")
    values["secondScheduler"]["enabled"] = False  # it needs a policy naming it
    base = render({**values_for({}, "deployment"), "secondScheduler": values["secondScheduler"]})
    got = render(values)
    assert base.docs is not None and got.docs is not None, got.error
    assert [(d["kind"], d["metadata"]["name"]) for d in got.docs] == [
        (d["kind"], d["metadata"]["name"]) for d in base.docs]
    body = re.sub(r"(?m)^[ \t]+$", "", text.strip("\n"))
    for path, name in FILES.items():
        key = PLACEHOLDERS[(*path[:-1], KEY)] if path[-1] == VALUE else name
        (cm,) = [d for d in got.docs if d["kind"] == "ConfigMap" and key in d.get("data", {})]
        assert sorted(cm) == ["apiVersion", "data", "kind", "metadata"]
        assert cm["data"][key] == (body + "\n" if body else ""), key


@pytest.mark.parametrize("namespace", ["a: b", "x\n  y: z", "Ops", "-a", "a" * 64])
def test_a_release_namespace_that_is_not_a_namespace_name_is_refused_with_the_reason(namespace: str) -> None:
    with pytest.raises(RuntimeError) as e:
        manifests.run_helm("template", "rel", str(manifests.CHART), "-n", namespace)
    assert f"the release namespace {json.dumps(namespace)} is not a Kubernetes namespace name" in str(e.value)


@pytest.mark.parametrize("release", ["on", "null", "123", "1e3"])
def test_a_release_or_namespace_yaml_would_read_as_a_boolean_number_or_null_stays_a_string(release: str) -> None:
    out = manifests.run_helm("template", release, str(manifests.CHART), "-n", release)
    for d in (d for d in yaml.safe_load_all(out) if d):
        assert d["metadata"]["labels"]["app.kubernetes.io/instance"] == release, d["kind"]
        assert d["metadata"].get("namespace", release) == release or d["metadata"]["namespace"] in (
            "default", "kube-system"), d["kind"]
