"""hack/kcp without a cluster: process identity and stop, build idempotence checks, start-up refusal."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from hack.kcp import build, controlplane, karpenter, metrics_server, nodes, paths, procs
from tests.waiting import wait_until


def test_a_started_process_is_recorded_and_stopped_by_its_own_pid(tmp_path: Path) -> None:
    rec = procs.start("sleeper", ["sleep", "60"], tmp_path)
    assert procs.is_ours_and_alive(rec)
    assert procs.stop(rec, grace=5) == "stopped"
    assert not procs.is_ours_and_alive(rec)
    assert (tmp_path / "sleeper.log").exists()


def test_a_process_ignoring_sigterm_is_killed(tmp_path: Path) -> None:
    script = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
              "print('up', flush=True); time.sleep(60)")
    rec = procs.start("stubborn", [sys.executable, "-c", script], tmp_path)
    deadline = time.monotonic() + 10
    while "up" not in (tmp_path / "stubborn.log").read_text() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert procs.stop(rec, grace=0.5) == "killed"
    assert not procs.is_ours_and_alive(rec)


def test_a_reused_pid_is_not_mistaken_for_ours() -> None:
    other = subprocess.Popen(["sleep", "30"])
    try:
        ticks = procs.start_ticks(other.pid)
        assert ticks is not None
        impostor = procs.ProcessRecord("x", other.pid, ticks + 1, "sleep", "/dev/null")
        assert not procs.is_ours_and_alive(impostor)
        assert procs.stop(impostor) == "not running"
        assert other.poll() is None, "stop() signalled a process that was not ours"
    finally:
        other.kill()
        other.wait()


def test_a_component_that_dies_during_start_up_is_reported_with_its_log(tmp_path: Path) -> None:
    rec = procs.start("broken", [sys.executable, "-c", "import sys; print('unknown flag --x'); sys.exit(3)"], tmp_path)
    with pytest.raises(RuntimeError, match=r"(?s)broken exited during start-up.*unknown flag --x"):
        controlplane.Cluster._wait_healthy(rec, "http://127.0.0.1:9/healthz", time.monotonic() + 30, None)


def test_up_refuses_with_a_clear_message_when_binaries_are_missing(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NODEMEDIC_CACHE", str(tmp_path / "empty-cache"))
    # Everything kept in the cache counts as missing; the Debian packages live outside it.
    assert set(build.missing()) >= set(build.COMPONENTS) - set(build.FIRST)
    with pytest.raises(RuntimeError, match="hack/cluster build"):
        controlplane.Cluster(tmp_path / "state").up(1)
    assert not (tmp_path / "state").exists()


def test_binaries_are_cached_outside_the_repository_keyed_by_version() -> None:
    repo = Path(__file__).resolve().parents[3]
    for name in controlplane.COMPONENTS:
        p = paths.binary(name)
        assert repo not in p.parents, p
    assert paths.kubernetes_dir().name.endswith(build.versions.KUBERNETES)
    assert paths.etcd_dir().name.endswith(build.versions.ETCD)


def test_standard_nodes_spread_over_three_zones_with_realistic_capacity() -> None:
    ms = nodes.standard_nodes(50)
    zones = [m["metadata"]["labels"]["topology.kubernetes.io/zone"] for m in ms]
    assert {z: zones.count(z) for z in set(zones)} == {"zone-a": 17, "zone-b": 17, "zone-c": 16}
    for m in ms:
        assert m["metadata"]["annotations"][nodes.KWOK_ANNOTATION] == "fake"
        assert set(m["status"]["allocatable"]) >= {"cpu", "memory", "pods"}
    assert len({m["metadata"]["name"] for m in ms}) == 50


def test_kwok_emulates_kubelet_metrics_only_for_a_cluster_that_asks_and_metrics_server_needs_it(
        tmp_path: Path) -> None:
    plain = controlplane.Cluster(tmp_path / "plain", ports={"kwok": 1})
    assert not [a for a in plain._kwok_args() if "kwok-metrics" in a or a.startswith("--server-address")]
    with pytest.raises(RuntimeError, match="without kwok metrics"):
        metrics_server.start(plain)
    metered = controlplane.Cluster(tmp_path / "metered", ports={"kwok": 4321}, kwok_metrics=True)
    args = metered._kwok_args()
    assert f"--config={controlplane.KWOK_METRICS}" in args and "--server-address=127.0.0.1:4321" in args
    assert f"--tls-cert-file={metered.pki_dir / 'kwok.crt'}" in args
    (node,) = [nodes.with_resource_metrics(m) for m in nodes.standard_nodes(1)]
    assert node["metadata"]["annotations"][nodes.RESOURCE_METRICS_PATH] == "/metrics/nodes/kwok-node-0/metrics/resource"


def test_down_fails_loudly_when_a_process_naming_the_cluster_survives(tmp_path: Path) -> None:
    c = controlplane.Cluster(tmp_path / "state")
    c.state_dir.mkdir()
    c.ports = {"apiserver": 1}
    c.save()
    stray = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", f"{c.state_dir}/marker"])
    try:
        wait_until(lambda: [pid for pid, _ in c.strays()] == [stray.pid], timeout=10, what="the stray to show up")
        with pytest.raises(RuntimeError, match="still running after down"):
            c.down()
    finally:
        stray.kill()
        stray.wait()
    assert c.strays() == []


def test_a_test_node_pool_makes_one_instance_type_and_consolidates_empty_nodes_within_seconds() -> None:
    spec = karpenter.NodePool(name="chain").manifest()["spec"]
    requirements = {r["key"]: r["values"] for r in spec["template"]["spec"]["requirements"]}
    assert requirements["node.kubernetes.io/instance-type"] == [karpenter.INSTANCE_TYPE]
    assert spec["template"]["spec"]["nodeClassRef"] == {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass",
                                                        "name": "default"}
    assert spec["disruption"] == {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "5s",
                                  "budgets": [{"nodes": "100%"}]}


def test_karpenter_counts_as_missing_without_its_crds_or_at_another_version(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NODEMEDIC_CACHE", str(tmp_path))
    assert not build.karpenter_version_matches("1.15.0")  # nothing there
    binary = paths.binary("karpenter")
    binary.parent.mkdir(parents=True)
    binary.write_bytes(b"not a Go binary")
    (binary.parent / "crds").mkdir()
    assert not build.karpenter_version_matches("1.15.0")  # no CRDs
    (binary.parent / "crds" / "karpenter.sh_nodepools.yaml").write_text("kind: CustomResourceDefinition\n")
    assert not build.karpenter_version_matches("1.15.0")  # `go version -m` finds no module version in it


def test_descheduler_is_stamped_with_its_release_date_from_the_module_info_file(tmp_path: Path) -> None:
    info = tmp_path / "v0.36.0.info"
    info.write_text('{"Version":"v0.36.0","Time":"2026-05-19T20:19:54Z"}')
    assert build.release_stamp({"Path": "sigs.k8s.io/descheduler", "Info": str(info)}) == "20260519"
    assert build.release_stamp({"Path": "sigs.k8s.io/descheduler", "Info": str(tmp_path / "gone.info")}) == "00000000"
    assert build.release_stamp({"Path": "sigs.k8s.io/descheduler"}) == "00000000"


def _fake_components(monkeypatch: pytest.MonkeyPatch, builders: dict[str, object], missing: set[str]) -> None:
    """Replaces the real builders with `builders` (name -> fn(samplers)), all of them missing until a fake builder
    takes its name out of `missing`."""
    missing |= set(builders)
    monkeypatch.setattr(build, "COMPONENTS", {n: (fn, [n], "v0") for n, fn in builders.items()})
    monkeypatch.setattr(build, "is_missing", lambda name: name in missing)


def _builds(ran: list[str], missing: set[str], name: str) -> object:
    """A fake builder that records its run and leaves its component built."""
    def fn(samplers: list[object]) -> None:
        ran.append(name)
        missing.discard(name)
    return fn


def test_components_build_two_at_a_time_longest_first_and_report_in_component_order(
        monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[str] = []
    running: set[str] = set()
    most_at_once = 0
    lock = threading.Lock()
    release = threading.Event()
    both_lanes = threading.Event()

    def builder(name: str) -> object:
        def fn(samplers: list[object]) -> None:
            nonlocal most_at_once
            with lock:
                started.append(name)
                running.add(name)
                most_at_once = max(most_at_once, len(running))
                if len(started) == 2:
                    both_lanes.set()
            # Nothing ends before both lanes have started, so the first two started are the first two dequeued
            # (which thread appends first is a race: a loaded cold run saw karpenter finish and kwok start before
            # the kubernetes thread had run at all).
            assert both_lanes.wait(30)
            if name == "kubernetes":  # the long one holds its lane until the others have run in the second
                assert release.wait(30)
            with lock:
                running.discard(name)
                missing.discard(name)
                if not missing - {"kubernetes"}:
                    release.set()
        return fn

    names = ["etcd", "kubernetes", "kwok", "karpenter"]
    missing: set[str] = set()
    _fake_components(monkeypatch, {n: builder(n) for n in names}, missing)
    reports = build.build(jobs=2)
    assert [r.component for r in reports] == names
    assert all(r.built for r in reports)
    assert set(started[:2]) == {"kubernetes", "karpenter"}  # longest first, from COLD_SECONDS
    assert most_at_once == 2


def test_a_failed_component_build_fails_the_build_and_cancels_the_ones_not_started(
        monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []

    def broken(samplers: list[object]) -> None:
        ran.append("kubernetes")
        raise SystemExit("[build kubernetes] command failed (1): go build")

    missing: set[str] = set()
    _fake_components(monkeypatch, {"kubernetes": broken, "etcd": _builds(ran, missing, "etcd"),
                                   "kwok": _builds(ran, missing, "kwok")}, missing)
    with pytest.raises(SystemExit, match="command failed"):
        build.build(jobs=1)
    assert ran == ["kubernetes"]


def test_only_what_the_demo_runs_is_built_for_it(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []
    missing: set[str] = set()
    _fake_components(monkeypatch, {n: _builds(ran, missing, n) for n in ("kubernetes", "etcd", "descheduler", "helm")},
                     missing)
    missing.discard("etcd")  # cached
    reports = build.build(["kubernetes", "etcd"])
    assert sorted(ran) == ["kubernetes"]
    assert [(r.component, r.built) for r in reports] == [("kubernetes", True), ("etcd", False)]
    assert set(build.DEMO) == {"kubernetes", "etcd", "kwok", "kubectl", "karpenter"}


def test_the_debian_packages_are_installed_before_any_other_build_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []
    missing: set[str] = set()
    names = ["kubernetes", "image", "debian"]  # the image's builder, buildah, is one of the packages
    _fake_components(monkeypatch, {n: _builds(ran, missing, n) for n in names}, missing)
    reports = build.build(jobs=2)
    assert ran[0] == "debian" and sorted(ran) == sorted(names)
    assert [r.component for r in reports] == names and all(r.built for r in reports)
