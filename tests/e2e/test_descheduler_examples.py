"""descheduler v0.36.0's own policies, read as they are: the example files (examples/), the chart's default
`deschedulerPolicy` (as `helm template` renders it into the chart's ConfigMap) and every DeschedulerPolicy printed in
its docs (READMEs, docs/). Each validates and `convert` writes the very policy it is read as, except the few that
descheduler itself refuses (checked by running it). For the examples and the chart
default, on a kwok workload built to make their strategies act, `nodemedic-remediator plan` with the file unchanged
evicts what descheduler evicts in dry-run with the same file, or differs only by documented ids; the v1alpha1 form
of an example (tests/testdata/policies/descheduler-v1alpha1/) plans exactly as the example.

The examples come from the descheduler module `make build` downloads; without it this test fails (it never
skips). The cluster and scenario machinery is test_descheduler_comparison.py's (one private control plane for the
module; each scenario's nodes are the only nodes while it runs). Ages that no API request can set (PodLifeTime's
seven days, RemoveFailedPods' hour) are given by moving the pods' creationTimestamp back in the cluster's etcd
(`backdate.py`). descheduler runs looping in dry-run and its second cycle counts (see hack/kcp/descheduler.py why).

Run: .venv/bin/python -m pytest tests/e2e/test_descheduler_examples.py -q -s  (-s prints the table)
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from kcp import descheduler, paths, versions
from remediator.policy.loader import PolicyError, convert_policy, parse_policy
from tests.e2e.conftest import LocalCluster
from tests.e2e.remediator_harness import REMEDIATOR, nodemedic_events
from tests.e2e.test_descheduler_comparison import (  # the fixtures, by name, give this module its own cluster
    BROKEN_TAINT,
    Built,
    Node,
    Pod,
    Scenario,
    build,  # noqa: F401
    compare_cluster,  # noqa: F401
    undocumented,
)
from tests.e2e.test_descheduler_comparison_balance import ZONE_SKEW_1, web
from tests.e2e.test_descheduler_comparison_deschedule import (
    _avoids,
    _failed,
    _node_affinity_required,
    _restarted,
    _restarts_crashloop,
)
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
V1ALPHA1 = ROOT / "tests" / "testdata" / "policies" / "descheduler-v1alpha1"
DOCS = [ROOT / "docs" / name for name in ("deschedule-strategies.md", "balance-strategies.md", "utilization.md",
                                          "remediator.md")]
TABLE_DOC = ROOT / "docs" / "descheduler-dropin.md"
A, B, C = "zone-a", "zone-b", "zone-c"
HOUR, DAY = 3600, 86400
NOW = dt.datetime.now(dt.UTC)


def module() -> Path:
    cache = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=False,
                           env=dict(os.environ, GOFLAGS="-mod=mod")).stdout.strip()
    where = Path(cache) / f"sigs.k8s.io/descheduler@v{versions.DESCHEDULER}"
    if not (where / "examples").is_dir():
        pytest.fail(f"descheduler v{versions.DESCHEDULER}'s module is not at {where}: run `make build` (it builds "
                    "descheduler from the module proxy); this test never skips", pytrace=False)
    return where


def examples() -> Path:
    return module() / "examples"


def chart_default(work: Path) -> Path:
    """The policy descheduler's chart deploys by default: its ConfigMap's policy.yaml, as helm renders it."""
    helm = paths.binary("helm")
    if not helm.exists():
        pytest.fail(f"helm is not built ({helm} missing): run `make build`; this test never skips", pytrace=False)
    out = subprocess.run([str(helm), "template", "descheduler", str(module() / "charts" / "descheduler")],
                         capture_output=True, text=True, check=True).stdout
    (config,) = [d for d in yaml.safe_load_all(out) if d and d["kind"] == "ConfigMap"]
    work.mkdir(parents=True, exist_ok=True)
    path = work / "chart-default-policy.yaml"
    path.write_text(config["data"]["policy.yaml"])
    return path


def documented() -> dict[str, str]:
    """Every DeschedulerPolicy printed in the module's Markdown: "path:line" (of the block's first line) -> text.
    Not keps/: design proposals, written in syntax that was never released."""
    root = module()
    found: dict[str, str] = {}
    for md in sorted(p for p in root.rglob("*.md") if p.relative_to(root).parts[0] != "keps"):
        text = md.read_text()
        for m in re.finditer(r"^```[^\n]*\n(.*?)^```", text, re.S | re.M):
            if re.search(r'^kind:\s*"?DeschedulerPolicy', m.group(1), re.M):
                found[f"{md.relative_to(root)}:{text[:m.start()].count(chr(10)) + 2}"] = m.group(1)
    return found


# Documented policies that descheduler v0.36.0 itself refuses (test_descheduler_refuses_them_too runs it): nodemedic
# refuses them too, naming the line.
DESCHEDULER_REFUSES = {
    "README.md:229": "a sketch: `- ...` and `[...]` placeholders (yaml: line 50: could not find expected ':')",
    "README.md:992": "PriorityClass \"priorityClassName1\" not found (a placeholder; not even a valid name)",
    "pkg/framework/plugins/example/README.md:47": "plugin Example in pluginConfig not registered (a developer's "
                                                  "sample, not built into descheduler)",
    "pkg/framework/plugins/podlifetime/README.md:116": "plugins.deschedule.enabled lists objects, not names",
    "pkg/framework/plugins/podlifetime/README.md:138": "plugins.deschedule.enabled lists objects, not names",
}


# --- the workloads -----------------------------------------------------------------------------------------
def _at(ago: int) -> str:
    return f"{NOW - dt.timedelta(seconds=ago):%Y-%m-%dT%H:%M:%SZ}"


def _completed(transitioned_ago: int) -> dict[str, Any]:
    """A Succeeded pod whose conditions say so since `transitioned_ago` seconds, as the kubelet writes them."""
    since = _at(transitioned_ago)
    return {"phase": "Succeeded", "conditions": [
        {"type": "Initialized", "status": "True", "reason": "PodCompleted", "lastTransitionTime": since},
        {"type": "Ready", "status": "False", "reason": "PodCompleted", "lastTransitionTime": since}]}


def _waiting(reason: str) -> dict[str, Any]:
    return {"containerStatuses": [{"name": "app", "restartCount": 0, "state": {"waiting": {"reason": reason}}}]}


def _three(prefix: str) -> tuple[Node, ...]:
    return Node(f"{prefix}-0", A), Node(f"{prefix}-1", B), Node(f"{prefix}-2", C)


def _failed_pods() -> Scenario:
    n = _three("xf")
    n0 = n[0].name
    return Scenario(
        "failed-pods",
        "Failed pods 2 h old: pod reason OutOfcpu, CreateContainerConfigError, Error; one OutOfcpu just created",
        n,
        (Pod("out-of-cpu", n0, 500, 512, 100, status={"phase": "Failed", "reason": "OutOfcpu"}),
         Pod("config-error", n0, 500, 512, 110, status={"phase": "Failed", **_waiting("CreateContainerConfigError")}),
         Pod("error", n0, 500, 512, 120, status=_failed("Error", 1)),
         Pod("young-out-of-cpu", n[1].name, 500, 512, 130, status={"phase": "Failed", "reason": "OutOfcpu"}),
         Pod("bare-out-of-cpu", n[1].name, 500, 512, 140, owner=None, status={"phase": "Failed", "reason": "OutOfcpu"}),
         Pod("running", n[2].name, 500, 512, 150)),
        {"RemoveFailedPods": {}},
        created_ago={"out-of-cpu": 2 * HOUR, "config-error": 2 * HOUR, "error": 2 * HOUR, "bare-out-of-cpu": 2 * HOUR,
                     "running": 2 * HOUR},
    )


def _high_node_utilization() -> Scenario:
    full = (Node("xh-full-0", A), Node("xh-full-1", B))
    return Scenario(
        "high-node-utilization",
        "memory: two nodes at 59%, two under 20% (one pod, two pods)",
        (*full, Node("xh-idle-0", C), Node("xh-idle-1", A)),
        (*(Pod(f"{f.name}-{j}", f.name, 1000, 2000, 900 + j) for f in full for j in range(3)),
         Pod("q0", "xh-idle-0", 500, 300, 100),
         Pod("q1", "xh-idle-1", 500, 400, 110), Pod("q2", "xh-idle-1", 500, 400, 120)),
        {"HighNodeUtilization": {}},
        # nodemedic empties one node at a time (maxConsolidatingNodes 1, the emptiest first) and taints it
        only_descheduler={"q1": "hnu-taint", "q2": "hnu-taint"},
    )


def _low_node_utilization() -> Scenario:
    hot = "xl-hot"
    cold = (Node("xl-cold-0", B), Node("xl-cold-1", C), Node("xl-cold-2", A))
    return Scenario(
        "low-node-utilization",
        "memory: one node at 80% (target 70%), three at 10% (threshold 20%)",
        (Node(hot, A), *cold),
        (Pod("a", hot, 500, 1536, 100), Pod("b", hot, 500, 1536, 200), Pod("c", hot, 500, 1024, 300),
         Pod("d", hot, 500, 2048, 400), Pod("e", hot, 500, 2048, 500),
         *(Pod(f"{c.name}-pod", c.name, 500, 1024, 50) for c in cold)),
        {"LowNodeUtilization": {}},
    )


def _pod_life_time_transition() -> Scenario:
    n = _three("xt")
    return Scenario(
        "pod-life-time-transition",
        "namespace default: Succeeded pods PodCompleted 5 h ago (one bare) and 1 min ago, a running pod",
        n,
        (Pod("stale-completed", n[0].name, 500, 512, 100, status=_completed(5 * HOUR)),
         Pod("recent-completed", n[0].name, 500, 512, 110, status=_completed(60)),
         Pod("stale-completed-bare", n[1].name, 500, 512, 120, owner=None, status=_completed(5 * HOUR)),
         Pod("running", n[2].name, 500, 512, 130)),
        {"PodLifeTime": {}},
        namespace="default",
    )


def _pod_life_time() -> Scenario:
    n = _three("xp")
    return Scenario(
        "pod-life-time",
        "PodInitializing for 8 days (one bare), PodInitializing just created, running for 8 days",
        n,
        (Pod("old-initializing", n[0].name, 500, 512, 100, status=_waiting("PodInitializing")),
         Pod("old-initializing-bare", n[0].name, 500, 512, 110, owner=None, status=_waiting("PodInitializing")),
         Pod("young-initializing", n[1].name, 500, 512, 120, status=_waiting("PodInitializing")),
         Pod("old-running", n[2].name, 500, 512, 130)),
        {"PodLifeTime": {}},
        created_ago={"old-initializing": 8 * DAY, "old-initializing-bare": 8 * DAY, "old-running": 8 * DAY},
    )


def _policy() -> Scenario:
    """A workload for each of the five plugins, on nodes of their own so that they do not meet. (Every pod of the
    harness runs the same image, so two pods of one owner on one node are duplicates: only `dup` is that.)"""
    hot, restarts, anti, mixed, spread = "xa-hot", "xa-restarts", "xa-anti", "xa-mixed", "xa-spread"
    return Scenario(
        "policy",
        "a node at 65% cpu/memory (target 50%); 150 restarts; two api pods that refuse to share a node; two "
        "replicas of one ReplicaSet on one node; a zone spread of 2/0/0 (maxSkew 1) over two nodes",
        (Node(hot, A), Node(restarts, B), Node(anti, C), Node(mixed, A), Node(spread, A)),
        (Pod("h1", hot, 3000, 3072, 300), Pod("h2", hot, 2000, 2048, 200), Pod("h3", hot, 1500, 1536, 100),
         Pod("r150", restarts, 500, 512, 150, status=_restarted(150)),
         Pod("api-1", anti, 500, 512, 210, owner="api", affinity=_avoids("api")),
         # another owner: two replicas of one owner on a node would be duplicates too, and whether descheduler's
         # RemoveDuplicates still sees api-1 after the anti-affinity plugin evicted it in the same dry-run cycle
         # is a race (its sandbox's lister): cycle 1 and cycle 2 of one run differed
         Pod("api-2", anti, 500, 512, 220, owner="api-b", labels=(("app", "api"),), affinity=_avoids("api")),
         Pod("dup-a", mixed, 250, 256, 400, owner="dup"), Pod("dup-b", mixed, 250, 256, 400, owner="dup"),
         *web({mixed: (110,), spread: (120,)}, ZONE_SKEW_1, cpu=250)),
        {"RemoveDuplicates": {}, "LowNodeUtilization": {}, "RemovePodsViolatingTopologySpreadConstraint": {}},
        # descheduler pops the spread's highest-priority pod, nodemedic its lowest
        only_descheduler={f"web-{spread}-120": "tsc-order"},
        only_nodemedic={f"web-{mixed}-110": "tsc-order"},
    )


def _topology_spread() -> Scenario:
    return Scenario(
        "topology-spread-constraint",
        "the zone article's story: 3/3 in zone-a/b while zone-c had no node, then zone-c's node is back (skew 3)",
        (Node("xs-a", A), Node("xs-b", B), Node("xs-c", C)),
        web({"xs-a": (100, 110, 120), "xs-b": (130, 140, 200)}, ZONE_SKEW_1),
        {"RemovePodsViolatingTopologySpreadConstraint": {}},
        # both move one pod out of b towards c, descheduler the highest priority one; descheduler also one out of a,
        # which nodemedic's owner cool-down (5s: one replica of a ReplicaSet per cycle) leaves to the next cycle
        only_descheduler={"web-xs-a-120": "cooldown", "web-xs-b-200": "tsc-order"},
        only_nodemedic={"web-xs-b-130": "tsc-order"},
    )


def _renamed(s: Scenario, name: str) -> Scenario:
    return replace(s, name=name)


# example file -> the workload that makes its strategies act
WORKLOADS = {
    "failed-pods.yaml": _failed_pods(),
    "high-node-utilization.yml": _high_node_utilization(),
    "low-node-utilization.yml": _low_node_utilization(),
    "node-affinity.yml": _renamed(_node_affinity_required(), "node-affinity"),
    "pod-life-time-transition.yml": _pod_life_time_transition(),
    "pod-life-time.yml": _pod_life_time(),
    "policy.yaml": _policy(),
    "too-many-restarts.yml": _renamed(_restarts_crashloop(), "too-many-restarts"),
    "topology-spread-constraint.yaml": _topology_spread(),
}


def _chart_default() -> Scenario:
    """policy.yaml's workload, and a node with a taint that a pod on it does not tolerate (the chart also enables
    RemovePodsViolatingNodeTaints and RemovePodsViolatingNodeAffinity)."""
    s = _policy()
    tainted = Node("xa-tainted", B, ((BROKEN_TAINT, "true", "NoSchedule"),))
    return replace(s, name="chart-default", about=s.about + "; a pod on a node with a taint it does not tolerate",
                   nodes=(*s.nodes, tainted), pods=(*s.pods, Pod("untolerated", tainted.name, 500, 512, 230)),
                   # nodemedic's RemovePodsViolatingNodeTaints without includedTaints acts on its own rules' taints
                   only_descheduler={**s.only_descheduler, "untolerated": "own-taints"})


CHART = "chart default"  # descheduler's chart's deschedulerPolicy: policy.yaml's plugins and more
PLANNED = {**WORKLOADS, CHART: _chart_default()}


# --- reading the examples ----------------------------------------------------------------------------------
def test_every_example_of_descheduler_is_known_here() -> None:
    assert sorted(p.name for p in examples().iterdir() if p.suffix in (".yaml", ".yml")) == sorted(WORKLOADS)


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_an_example_validates_and_converts_to_the_policy_it_is_read_as(name: str) -> None:
    text = (examples() / name).read_text()
    policy = parse_policy(text, source=name)
    assert policy.strategies, f"{name} enables no strategy here"
    converted = convert_policy(text, source=name)
    assert parse_policy(converted, source=f"converted-{name}") == policy
    print(f"\n{name}: {', '.join(s.name for s in policy.strategies)}; converted policy identical")


def test_the_documented_policies_are_the_ones_known_here() -> None:
    found = documented()
    assert len(found) == 26, sorted(found)
    assert set(DESCHEDULER_REFUSES) <= set(found)


@pytest.mark.parametrize("where", sorted(documented()))
def test_a_documented_policy_validates_and_converts_unless_descheduler_refuses_it_too(where: str) -> None:
    text = documented()[where]
    if where in DESCHEDULER_REFUSES:
        with pytest.raises(PolicyError) as e:
            parse_policy(text, source=where)
        assert all(re.match(rf"{re.escape(where)}:\d+: ", m) for m in e.value.errors), e.value.errors
        print(f"\n{where}: refused: {e.value.errors[0]}")
        return
    policy = parse_policy(text, source=where)
    assert parse_policy(convert_policy(text, source=where), source=f"converted-{where}") == policy
    print(f"\n{where}: {', '.join(s.name for s in policy.strategies)}; converted policy identical")


def test_the_chart_default_validates_and_converts(tmp_path: Path) -> None:
    text = chart_default(tmp_path).read_text()
    policy = parse_policy(text, source="chart default")
    assert policy.evictor.evict_local_storage_pods and policy.evictor.ignore_pvc_pods  # its podProtections
    assert parse_policy(convert_policy(text, source="chart default"), source="converted") == policy


def test_descheduler_refuses_them_too(compare_cluster: LocalCluster, tmp_path: Path) -> None:  # noqa: F811
    found = documented()
    for where, why in sorted(DESCHEDULER_REFUSES.items()):
        policy_file = tmp_path / f"{where.replace('/', '_')}.yaml"
        policy_file.write_text(found[where])
        proc = subprocess.run([str(paths.binary("descheduler")), f"--policy-config-file={policy_file}", "--dry-run",
                               "--descheduling-interval=0", f"--kubeconfig={compare_cluster.kubeconfig}",
                               "--secure-port=0"], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                              check=False)
        assert proc.returncode != 0, f"descheduler accepted {where}, listed as refused ({why})"
        print(f"\n{where}: descheduler exits {proc.returncode}: {proc.stderr.strip().splitlines()[-1][:200]}")


@pytest.mark.parametrize("name", sorted(p.name for p in V1ALPHA1.iterdir()))
def test_the_v1alpha1_form_of_an_example_reads_as_the_same_policy(name: str) -> None:
    """v1alpha1, as the published guides print it, through descheduler's own migration: the same policy."""
    v1alpha1 = parse_policy((V1ALPHA1 / name).read_text(), source=name)
    assert v1alpha1 == parse_policy((examples() / name).read_text(), source=name)
    assert parse_policy(convert_policy((V1ALPHA1 / name).read_text(), source=name), source=name) == v1alpha1


# --- planning them next to descheduler ---------------------------------------------------------------------
@dataclass
class Row:
    example: str
    strategies: str
    descheduler: set[str]
    nodemedic: set[str]
    differences: dict[str, str] = field(default_factory=dict)  # pod -> id
    v1alpha1: str = "none"


@pytest.fixture(scope="module")
def table() -> Iterator[list[Row]]:
    rows: list[Row] = []
    yield rows
    if rows:
        print("\n\n" + markdown(rows))


def markdown(rows: list[Row]) -> str:
    def pods(ps: set[str]) -> str:
        return ", ".join(sorted(ps)) or "none"

    lines = ["| policy | strategies | descheduler evicts | nodemedic evicts | differences | v1alpha1 form |",
             "|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: r.example):
        diff = ", ".join(f"{p}: `{i}`" for p, i in sorted(r.differences.items())) or "none"
        example = f"`{r.example}`" if r.example in WORKLOADS else r.example
        lines.append(f"| {example} | {r.strategies} | {pods(r.descheduler)} | {pods(r.nodemedic)} | {diff} | "
                     f"{r.v1alpha1} |")
    return "\n".join(lines)


def _slots(evictions: list[tuple[str, str, str]], s: Scenario) -> set[str]:
    """(pod, node, strategy) -> pod names; RemoveDuplicates' evictions as owner@node#k, because which of identical
    replicas descheduler picks is its lister's order, not a property of the pods."""
    owners = {p.name: p.owner or p.name for p in s.pods}
    seen: Counter[str] = Counter()
    out = set()
    for pod, node, strategy in sorted(evictions):
        if strategy == "RemoveDuplicates":
            group = f"{owners[pod]}@{node}"
            seen[group] += 1
            out.add(f"{group}#{seen[group]}")
        else:
            out.add(pod)
    return out


def descheduler_evicts(cluster: LocalCluster, policy_file: Path, s: Scenario, built: Built, work: Path) -> set[str]:
    doc = yaml.safe_load(policy_file.read_text())  # written back as JSON, which descheduler reads the same
    r = descheduler.settled_cycle(cluster.kubeconfig, doc, workdir=work / "descheduler", expect=built.view)
    foreign = [e for e in r.evictions if e.namespace != built.namespace]
    assert not foreign, f"descheduler would evict pods outside the scenario: {foreign}"
    return _slots([(e.name, e.node, e.strategy) for e in r.evictions], s)


def plan_json(cluster: LocalCluster, policy_file: Path) -> dict[str, Any]:
    proc = subprocess.run([*REMEDIATOR, "plan", "--policy", str(policy_file), "--kubeconfig",
                           str(cluster.kubeconfig), "--json"], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"), check=False)
    assert proc.returncode == 0, f"plan --policy {policy_file} failed ({proc.returncode}):\n{proc.stderr[-3000:]}"
    plan: dict[str, Any] = json.loads(proc.stdout)
    return plan


def nodemedic_evicts(cluster: LocalCluster, policy_file: Path, s: Scenario, built: Built) -> tuple[set[str], str]:
    plan = plan_json(cluster, policy_file)
    foreign = [e for e in plan["evictions"] if e["namespace"] != built.namespace]
    assert not foreign, f"nodemedic would evict pods outside the scenario: {foreign}"
    reasons = "\n".join(f"    {e['name']} ({e['strategy']}): {e['reason']}" for e in plan["evictions"])
    kept = "\n".join(f"    not {r['name']}: {r['why']}" for r in (*plan.get("protected", []), *plan.get("deferred", []))
                     if r["namespace"] == built.namespace)
    return _slots([(e["name"], e["node"], e["strategy"]) for e in plan["evictions"]], s), f"{reasons}\n{kept}"


@pytest.mark.parametrize("name", sorted(PLANNED))
def test_an_example_plans_as_descheduler_does(name: str, compare_cluster: LocalCluster, build: Any,  # noqa: F811
                                              table: list[Row], tmp_path: Path) -> None:
    policy_file = chart_default(tmp_path) if name == CHART else examples() / name
    compare(name, policy_file, PLANNED[name], compare_cluster, build, table, tmp_path)


def _storage_classes() -> Scenario:
    bad = Node("xc-bad", A, ((BROKEN_TAINT, "true", "NoSchedule"),))
    claims = {"on-class-0": "storage-class-0", "on-class-1": "storage-class-1", "on-class-2": "storage-class-2",
              "on-no-class": ""}
    return Scenario(
        "pvc-storage-classes",
        "pods on a tainted node with PVCs of storage-class-0, -1 (protected), -2, none (cannot be told), no PVC",
        (bad, Node("xc-good-0", B), Node("xc-good-1", C)),
        (*(Pod(pod, bad.name, 500, 512, 100 + i, claims=(f"data-{pod}",)) for i, pod in enumerate(claims)),
         Pod("no-claim", bad.name, 500, 512, 200)),
        {"RemovePodsViolatingNodeTaints": {}},
        claims=tuple((f"data-{pod}", storage_class) for pod, storage_class in claims.items()),
    )


STORAGE_CLASSES = "README.md:201"  # podProtections.config.PodsWithPVC.protectedStorageClasses


def test_the_documented_pvc_storage_classes_protect_what_descheduler_protects(
        compare_cluster: LocalCluster, build: Any, table: list[Row], tmp_path: Path) -> None:  # noqa: F811
    """The README's DefaultEvictor (protect pods whose PVCs have storage-class-0 or -1) enables no plugin of its
    own; here it serves RemovePodsViolatingNodeTaints (includedTaints: the node's taint), added to its profile, on a
    node both must empty."""
    doc = yaml.safe_load(documented()[STORAGE_CLASSES])
    doc["profiles"][0]["pluginConfig"].append({"name": "RemovePodsViolatingNodeTaints",  # descheduler needs both
                                               "args": {"includedTaints": [BROKEN_TAINT]}})
    doc["profiles"][0]["plugins"] = {"deschedule": {"enabled": ["RemovePodsViolatingNodeTaints"]}}
    policy_file = tmp_path / "readme-201-with-taints.yaml"
    policy_file.write_text(yaml.safe_dump(doc, sort_keys=False))
    compare(f"{STORAGE_CLASSES} + RemovePodsViolatingNodeTaints", policy_file, _storage_classes(), compare_cluster,
            build, table, tmp_path)


def compare(name: str, policy_file: Path, s: Scenario, cluster: LocalCluster, build: Any,  # noqa: F811
            table: list[Row], tmp_path: Path) -> None:
    built: Built = build(s)
    t0 = time.monotonic()
    d = descheduler_evicts(cluster, policy_file, s, built, tmp_path)
    took = time.monotonic() - t0
    n, detail = nodemedic_evicts(cluster, policy_file, s, built)
    row = Row(name, ", ".join(x.name for x in parse_policy(policy_file.read_text(), source=name).strategies), d, n,
              {**s.only_descheduler, **s.only_nodemedic})
    converted = tmp_path / "converted.yaml"
    converted.write_text(convert_policy(policy_file.read_text(), source=name))
    nc, _ = nodemedic_evicts(cluster, converted, s, built)
    assert nc == n, f"`convert` of {name} plans {sorted(nc)}, the example {sorted(n)}"
    if (V1ALPHA1 / name).exists():
        n1, _ = nodemedic_evicts(cluster, V1ALPHA1 / name, s, built)
        assert n1 == n, f"the v1alpha1 form of {name} plans {sorted(n1)}, the example {sorted(n)}"
        row.v1alpha1 = "same evictions"
    table.append(row)
    print(f"\n=== {name} ({s.about}); descheduler {took:.1f}s\n  descheduler: {sorted(d)}\n  nodemedic:   {sorted(n)}\n"
          f"{detail}")
    want_d, want_n = set(s.only_descheduler), set(s.only_nodemedic)
    assert (d - n, n - d) == (want_d, want_n), (
        f"{name}: the differences are not the declared (documented) ones\n  only descheduler: {sorted(d - n)}, "
        f"declared {sorted(want_d)}\n  only nodemedic: {sorted(n - d)}, declared {sorted(want_n)}\n{detail}")


# --- the CronJob a descheduler user switches to --------------------------------------------------------------
def nodemedic_cronjob(policy_file: Path) -> tuple[dict[str, Any], str]:
    """nodemedic's chart in CronJob mode with a DeschedulerPolicy as its policy (`--set-file remediator.policy=`):
    the CronJob's container, and the policy its ConfigMap holds (what the container reads at the mount)."""
    helm = paths.binary("helm")
    out = subprocess.run([str(helm), "template", "t", str(ROOT / "deploy" / "helm" / "nodemedic"),
                          "--set", "remediator.mode=cronjob", "--set-file", f"remediator.policy={policy_file}"],
                         capture_output=True, text=True, check=True).stdout
    docs = [d for d in yaml.safe_load_all(out) if d]
    (cron,) = [d for d in docs if d["kind"] == "CronJob"]
    assert cron["spec"]["concurrencyPolicy"] == "Forbid"
    pod = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == "policy"]
    (volume,) = [v for v in pod["volumes"] if v["name"] == "policy"]
    (config,) = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == volume["configMap"]["name"]]
    return {**container, "mountPath": mount["mountPath"]}, config["data"]["policy.yaml"]


def test_the_chart_in_cronjob_mode_runs_a_descheduler_policy_once_evicting_what_plan_predicted(
        compare_cluster: LocalCluster, build: Any, tmp_path: Path) -> None:  # noqa: F811
    """Issue 16's switch: descheduler's policy.yaml given to nodemedic's chart as it is. The CronJob's command and
    arguments run here exactly as rendered (kwok pods run no containers), against the file its ConfigMap holds."""
    container, rendered = nodemedic_cronjob(examples() / "policy.yaml")
    assert rendered.strip() == (examples() / "policy.yaml").read_text().strip()
    mounted = tmp_path / "policy-mount"
    mounted.mkdir()
    (mounted / "policy.yaml").write_text(rendered)
    assert container["command"] == ["nodemedic-remediator"] and container["args"][:2] == ["run", "--once"]
    args = [a.replace(container["mountPath"], str(mounted)) for a in container["args"]]
    s = _renamed(_policy(), "cronjob")
    built: Built = build(s)
    plan = plan_json(compare_cluster, mounted / "policy.yaml")
    predicted = sorted(e["name"] for e in plan["evictions"])
    assert len(predicted) == 5, plan  # h3, r150, api-1, a dup replica, a web replica: every plugin acts

    done = subprocess.run([sys.executable, "-m", "remediator", *args, f"--kubeconfig={compare_cluster.kubeconfig}"],
                          capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "one cycle done" in done.stderr + done.stdout
    core = client.CoreV1Api(compare_cluster.api)
    evicted = sorted(e.involved_object.name for e in nodemedic_events(core, built.namespace, "NodemedicEvicted"))
    print(f"\nCronJob run: nodemedic-remediator {' '.join(args)}\n  plan predicted {predicted}\n  run evicted    "
          f"{evicted}, exit {done.returncode}")
    assert evicted == predicted
    wait_until(lambda: not set(predicted) & {p.metadata.name for p in core.list_namespaced_pod(built.namespace).items},
               timeout=60, what="the evicted pods gone")


def test_every_difference_id_is_documented() -> None:
    missing = set(undocumented(list(PLANNED.values()), DOCS[0]))
    for doc in DOCS[1:]:
        missing &= set(undocumented(list(PLANNED.values()), doc))
    assert not missing, f"difference ids used here but documented in none of {DOCS}: {sorted(missing)}"
