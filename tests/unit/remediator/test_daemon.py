"""`nodemedic-remediator run` as daemon.py starts it: a --listen address it cannot take ends the start with exit 2,
the flag named, and the one-shot commands load none of it."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from remediator.cli import main

ROOT = Path(__file__).resolve().parents[3]
POLICY = str(ROOT / "deploy" / "policy" / "default.yaml")


def test_a_listen_address_in_use_ends_the_start_with_exit_2_naming_the_flag(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters:\n- name: k\n  cluster: {server: 'http://127.0.0.1:1/'}\n"
                          "contexts:\n- name: c\n  context: {cluster: k, user: u}\ncurrent-context: c\n"
                          "users:\n- name: u\n  user: {token: abc}\n")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = main(["run", "--policy", POLICY, "--kubeconfig", str(kubeconfig), "--listen", f"127.0.0.1:{port}",
                     "--log-format", "json"])
    assert code == 2
    captured = capsys.readouterr()
    assert f"nodemedic-remediator: --listen 127.0.0.1:{port}: " in captured.err
    assert "Traceback" not in captured.err
    logged = [json.loads(line) for line in captured.err.splitlines() if line.startswith("{")]
    assert [e["msg"] for e in logged if e["level"] == "error"] == ["cannot serve /metrics, /healthz and /plan"]


def test_the_one_shot_commands_load_nothing_of_the_daemon() -> None:
    # A process of its own: this one has imported everything already. What `plan --kubeconfig` does not need costs
    # it time on every run (issue 43's one-shot ratio): the HTTP server, the notifier's and Prometheus's client.
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, remediator.cli; print(' '.join(sorted(m for m in sys.modules if m in "
         "('remediator.daemon', 'remediator.control.controller', 'remediator.alerts.notifier', 'aiohttp'))))"],
        capture_output=True, text=True, check=True, cwd=ROOT).stdout.split()
    assert loaded == []
