"""hack/kcp/nodeservice.py without a cluster: the commands' arguments, the move out of the caller's cgroups (on a fake
cgroup root), the state file's records replaced in place, the lock `down` shares, the boot id."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from hack.kcp import cli, nodeservice, procs, versions

V1 = ("blkio", "cpu", "cpuacct", "cpuset", "devices", "freezer", "memory", "pids", "systemd", "unified")


def fake_v1(root: Path) -> Path:
    """A cgroup v1 layout as on these machines: one directory per hierarchy, each with cgroup.procs and a child
    cgroup; a tmpfs (no cgroup.procs) at the root."""
    for name in V1:
        (root / name / "kubepods" / "pod1").mkdir(parents=True)
        (root / name / "cgroup.procs").write_text("")
        (root / name / "kubepods" / "pod1" / "cgroup.procs").write_text("42\n")
    (root / "cpu,cpuacct").symlink_to(root / "cpu")  # one hierarchy under two names: written once
    return root


def test_the_pid_goes_into_the_root_of_every_v1_hierarchy_and_nowhere_else(tmp_path: Path) -> None:
    root = fake_v1(tmp_path)
    written = nodeservice.escape_cgroups(4242, root)
    assert sorted(p.parent.name for p in written) == sorted(V1)
    for name in V1:
        assert (root / name / "cgroup.procs").read_text() == "4242\n"
        assert (root / name / "kubepods" / "pod1" / "cgroup.procs").read_text() == "42\n"


def test_on_a_v2_root_only_the_root_is_written(tmp_path: Path) -> None:
    (tmp_path / "cgroup.procs").write_text("")
    (tmp_path / "kubepods.slice").mkdir()
    (tmp_path / "kubepods.slice" / "cgroup.procs").write_text("")
    assert nodeservice.escape_cgroups(7, tmp_path) == [tmp_path / "cgroup.procs"]
    assert (tmp_path / "kubepods.slice" / "cgroup.procs").read_text() == ""


def test_a_hierarchy_that_refuses_is_named(tmp_path: Path) -> None:
    root = fake_v1(tmp_path)
    (root / "memory" / "cgroup.procs").unlink()
    (root / "memory" / "cgroup.procs").mkdir()  # writing fails as the kernel's EBUSY/EPERM would
    with pytest.raises(RuntimeError, match=r"memory/cgroup\.procs"):
        nodeservice.escape_cgroups(1, root)
    (empty := tmp_path / "empty-root").mkdir()
    with pytest.raises(RuntimeError, match="no cgroup hierarchy"):
        nodeservice.escape_cgroups(1, empty)


def test_the_lines_left_outside_a_root_cgroup_are_found() -> None:
    text = ("9:name=systemd:/\n8:pids:/kubepods/besteffort/pod1/abc\n4:memory:/process_api/1267\n3:cpuset:/\n"
            "0::/\n")
    assert nodeservice.not_in_root(text) == ["8:pids:/kubepods/besteffort/pod1/abc", "4:memory:/process_api/1267"]
    assert nodeservice.not_in_root("9:name=systemd:/\n0::/\n") == []


def rec(name: str, pid: int) -> procs.ProcessRecord:
    return procs.ProcessRecord(name, pid, 1000 + pid, name, f"/logs/{name}.log")


def state(tmp_path: Path, *records: procs.ProcessRecord) -> Path:
    path = tmp_path / "state.json"
    path.write_text(json.dumps({"ports": {"apiserver": 6443}, "processes": [r.to_json() for r in records],
                                "real_nodes": 1, "kwok_metrics": True}))
    return path


def test_a_restarted_process_replaces_its_record_in_place_and_the_rest_stays(tmp_path: Path) -> None:
    path = state(tmp_path, rec("etcd", 10), rec("containerd", 20), rec("kubelet", 30), rec("kube-proxy", 40))
    nodeservice.replace_record(path, rec("kubelet", 30), rec("kubelet", 31))
    data = json.loads(path.read_text())
    assert [(p["name"], p["pid"]) for p in data["processes"]] == [
        ("etcd", 10), ("containerd", 20), ("kubelet", 31), ("kube-proxy", 40)]
    assert data["processes"][2] == rec("kubelet", 31).to_json()
    assert (data["ports"], data["real_nodes"], data["kwok_metrics"]) == ({"apiserver": 6443}, 1, True)
    assert nodeservice.records(path)[2] == rec("kubelet", 31)
    assert not list(tmp_path.glob("*.tmp"))


def test_the_record_is_found_by_name_when_its_pid_was_changed_meanwhile(tmp_path: Path) -> None:
    path = state(tmp_path, rec("kubelet", 30), rec("karpenter", 50))
    nodeservice.replace_record(path, rec("kubelet", 29), rec("kubelet", 32))
    assert [p["pid"] for p in json.loads(path.read_text())["processes"]] == [32, 50]
    with pytest.raises(RuntimeError, match="no record of coredns"):
        nodeservice.replace_record(path, rec("coredns", 1), rec("coredns", 2))


def test_the_lock_is_exclusive_and_waits_a_bounded_time(tmp_path: Path) -> None:
    with nodeservice.state_lock(tmp_path, timeout=1) as held:
        assert held
        with nodeservice.state_lock(tmp_path, timeout=0.3) as second:
            assert not second
    with nodeservice.state_lock(tmp_path, timeout=0.3) as again:
        assert again
    with nodeservice.state_lock(tmp_path / "gone", timeout=0.3) as gone:
        assert not gone


def test_the_boot_id_is_a_new_uuid_written_in_place(tmp_path: Path) -> None:
    path = tmp_path / "node" / "boot_id"
    first = nodeservice.write_boot_id(path)
    inode = path.stat().st_ino
    second = nodeservice.write_boot_id(path)
    assert first != second and path.read_text() == second + "\n"
    assert str(uuid.UUID(second)) == second
    assert path.stat().st_ino == inode  # a file bind-mounted into a container sees the new one


def test_the_cluster_script_runs_by_its_path_from_root_with_the_services_environment() -> None:
    # As spawn_worker starts it (and the agent's repair commands name it): at /, without the repository's directory
    # or a PYTHONPATH; hack/cluster itself makes the repository its child's import root.
    done = subprocess.run([sys.executable, str(nodeservice.CLUSTER_SCRIPT), "versions"], cwd="/",
                          env=nodeservice.SERVICE_ENV, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[:2] == ["kubernetes", versions.KUBERNETES]


def test_a_cluster_without_state_or_without_the_real_node_is_refused(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(RuntimeError, match="no cluster state"):
        nodeservice.check_real_node(tmp_path)
    state(tmp_path, rec("kubelet", 30))
    monkeypatch.setattr(nodeservice.realnode, "LOCK", tmp_path / "real-node.lock")
    with pytest.raises(RuntimeError, match="absent"):
        nodeservice.check_real_node(tmp_path)
    (tmp_path / "real-node.lock").write_text("/elsewhere")
    with pytest.raises(RuntimeError, match="/elsewhere"):
        nodeservice.check_real_node(tmp_path)
    (tmp_path / "real-node.lock").write_text(str(tmp_path))
    nodeservice.check_real_node(tmp_path)
    with pytest.raises(RuntimeError, match="unknown service"):
        nodeservice.restart(tmp_path, "sshd", 1, print)


def test_the_commands_arguments(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls: list[tuple[object, ...]] = []
    monkeypatch.setattr(nodeservice, "run_restart", lambda *a: calls.append(("restart", *a)) or 0)
    monkeypatch.setattr(nodeservice, "run_reboot", lambda *a, **k: calls.append(("reboot", *a, k)) or 0)
    monkeypatch.setenv("NODEMEDIC_STATE", str(tmp_path / "clusters"))
    assert cli.main(["node-service", "restart", "kubelet", "--name", "x"]) == 0
    assert cli.main(["node-service", "restart", "containerd", "--state-dir", str(tmp_path), "--timeout", "5"]) == 0
    assert cli.main(["node-reboot", "--boot-id-file", "/run/b", "--name", "x", "--off-seconds", "3"]) == 0
    assert cli.main(["node-reboot", "--boot-id-file", "/run/b", "--state-dir", str(tmp_path), "--worker"]) == 0
    assert cli.main(["node-reboot", "--boot-id-file", "/run/b", "--state-dir", str(tmp_path), "--off-seconds", "900",
                     "--power-button", str(tmp_path / "on")]) == 0
    assert calls == [
        ("restart", tmp_path / "clusters" / "x", "kubelet", 60.0, False),
        ("restart", tmp_path, "containerd", 5.0, False),
        ("reboot", tmp_path / "clusters" / "x", Path("/run/b"), 3.0, 1.0, False, {"power_button": None}),
        ("reboot", tmp_path, Path("/run/b"), 0.0, 1.0, True, {"power_button": None}),
        ("reboot", tmp_path, Path("/run/b"), 900.0, 1.0, False, {"power_button": tmp_path / "on"}),
    ]
    for bad in (["node-service", "restart", "sshd"], ["node-service", "reload", "kubelet"], ["node-reboot"]):
        with pytest.raises(SystemExit) as e:
            cli.main(bad)
        assert e.value.code == 2


def test_a_reboot_boot_id_file_must_be_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    state(tmp_path, rec("kubelet", 30))
    monkeypatch.setattr(nodeservice.realnode, "LOCK", tmp_path / "real-node.lock")
    (tmp_path / "real-node.lock").write_text(str(tmp_path))
    assert nodeservice.run_reboot(tmp_path, Path("boot_id"), 0, 0, worker=False) == 1
    assert "absolute path" in capsys.readouterr().err


def test_a_reboot_empties_the_reboot_marker_from_run(tmp_path: Path) -> None:
    marker, pkgs = tmp_path / "reboot-required", tmp_path / "reboot-required.pkgs"
    marker.write_text("*** System restart required ***\n")
    pkgs.write_text("linux-image-6.1.0-27-amd64\n")
    assert nodeservice._clear_reboot_marker((marker, pkgs)) == f"{marker}, {pkgs} gone with /run"
    assert not marker.exists() and not pkgs.exists()
    assert nodeservice._clear_reboot_marker((marker, pkgs)) == "no reboot marker in /run"
