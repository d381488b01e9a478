"""descheduler v0.36.0's own policies, read as they are: the example files (examples/), the chart's default
`deschedulerPolicy` (as `helm template` renders it into the chart's ConfigMap) and every DeschedulerPolicy printed in
its docs (READMEs, docs/). Each validates and `convert` writes the very policy it is read as, except the few that
descheduler itself refuses (checked by running it). For the examples and the chart
default, on a kwok workload built to make their strategies act, `nodemedic-remediator plan` with the file unchanged
evicts what descheduler evicts in dry-run with the same file, or differs only by documented ids; the v1alpha1 form
of an example (tests/testdata/policies/descheduler-v1alpha1/) plans exactly as the example.

The policies come from the descheduler module `make build` downloads (`descheduler_policies.py`), the workloads
from `descheduler_workloads.py`. The cluster and scenario machinery is descheduler_comparison_harness.py's (one
private control plane for the module; each scenario's nodes are the only nodes while it runs). Ages that no API
request can set (PodLifeTime's seven days, RemoveFailedPods' hour) are given by moving the pods' creationTimestamp
back in the cluster's etcd (`backdate.py`). descheduler runs looping in dry-run and its second cycle counts (see
hack/kcp/descheduler.py why).

Run: .venv/bin/python -m pytest tests/e2e/test_descheduler_examples.py -q -s  (-s prints the table)
"""

from __future__ import annotations

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

from hack.kcp import descheduler, paths
from nodemedic_common.config_errors import ConfigError
from remediator.policy.loader import convert_policy, parse_policy
from remediator.strategies import CATALOG
from tests.e2e.conftest import LocalCluster
from tests.e2e.descheduler_comparison_harness import (  # the fixtures, by name, give this module its own cluster
    BROKEN_TAINT,
    Built,
    Scenario,
    build,  # noqa: F401
    compare_cluster,  # noqa: F401
    undocumented,
)
from tests.e2e.descheduler_policies import (
    DESCHEDULER_REFUSES,
    V1ALPHA1,
    chart_default,
    documented,
    examples,
)
from tests.e2e.descheduler_workloads import CHART, PLANNED, WORKLOADS, storage_classes
from tests.e2e.remediator_harness import REMEDIATOR, nodemedic_events
from tests.waiting import wait_until

# One xdist worker runs the whole module: its tests share one comparison cluster and print one table.
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("descheduler_examples")]

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "docs" / name for name in ("deschedule-strategies.md", "balance-strategies.md", "utilization.md",
                                          "remediator.md")]


# --- reading the examples ----------------------------------------------------------------------------------
def test_every_example_of_descheduler_is_known_here() -> None:
    assert sorted(p.name for p in examples().iterdir() if p.suffix in (".yaml", ".yml")) == sorted(WORKLOADS)


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_an_example_validates_and_converts_to_the_policy_it_is_read_as(name: str) -> None:
    text = (examples() / name).read_text()
    policy = parse_policy(text, source=name, catalog=CATALOG)
    assert policy.strategies, f"{name} enables no strategy here"
    converted = convert_policy(text, source=name, catalog=CATALOG)
    assert parse_policy(converted, source=f"converted-{name}", catalog=CATALOG) == policy
    print(f"\n{name}: {', '.join(s.name for s in policy.strategies)}; converted policy identical")


def test_the_documented_policies_are_the_ones_known_here() -> None:
    found = documented()
    assert len(found) == 26, sorted(found)
    assert set(DESCHEDULER_REFUSES) <= set(found)


@pytest.mark.parametrize("where", sorted(documented()))
def test_a_documented_policy_validates_and_converts_unless_descheduler_refuses_it_too(where: str) -> None:
    text = documented()[where]
    if where in DESCHEDULER_REFUSES:
        with pytest.raises(ConfigError) as e:
            parse_policy(text, source=where, catalog=CATALOG)
        assert all(re.match(rf"{re.escape(where)}:\d+: ", m) for m in e.value.errors), e.value.errors
        print(f"\n{where}: refused: {e.value.errors[0]}")
        return
    policy = parse_policy(text, source=where, catalog=CATALOG)
    assert parse_policy(convert_policy(text, source=where, catalog=CATALOG), source=f"converted-{where}",
                        catalog=CATALOG) == policy
    print(f"\n{where}: {', '.join(s.name for s in policy.strategies)}; converted policy identical")


def test_the_chart_default_validates_and_converts(tmp_path: Path) -> None:
    text = chart_default(tmp_path).read_text()
    policy = parse_policy(text, source="chart default", catalog=CATALOG)
    assert policy.evictor.evict_local_storage_pods and policy.evictor.ignore_pvc_pods  # its podProtections
    assert parse_policy(convert_policy(text, source="chart default", catalog=CATALOG), source="converted",
                        catalog=CATALOG) == policy


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
    v1alpha1 = parse_policy((V1ALPHA1 / name).read_text(), source=name, catalog=CATALOG)
    assert v1alpha1 == parse_policy((examples() / name).read_text(), source=name, catalog=CATALOG)
    assert parse_policy(convert_policy((V1ALPHA1 / name).read_text(), source=name, catalog=CATALOG), source=name,
                        catalog=CATALOG) == v1alpha1


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
    compare(f"{STORAGE_CLASSES} + RemovePodsViolatingNodeTaints", policy_file, storage_classes(), compare_cluster,
            build, table, tmp_path)


def compare(name: str, policy_file: Path, s: Scenario, cluster: LocalCluster, build: Any,  # noqa: F811
            table: list[Row], tmp_path: Path) -> None:
    built: Built = build(s)
    t0 = time.monotonic()
    d = descheduler_evicts(cluster, policy_file, s, built, tmp_path)
    took = time.monotonic() - t0
    n, detail = nodemedic_evicts(cluster, policy_file, s, built)
    row = Row(name, ", ".join(x.name for x in parse_policy(policy_file.read_text(), source=name,
                                                           catalog=CATALOG).strategies), d, n,
              {**s.only_descheduler, **s.only_nodemedic})
    converted = tmp_path / "converted.yaml"
    converted.write_text(convert_policy(policy_file.read_text(), source=name, catalog=CATALOG))
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
    s = replace(PLANNED["policy.yaml"], name="cronjob")
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
