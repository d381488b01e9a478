"""The chaos harness: faults injected into the real local control plane, and the figures each scenario reports.

* `figures` (the fixture is in conftest.py): every number a scenario measures is printed at once on the terminal
  (`[chaos] ...`, even under pytest's capture), attached to the test report, and appended as a JSON line to
  $NODEMEDIC_CHAOS_FIGURES when that is set (docs/reliability.md's table is made from those lines).
* `audited_cluster(nodes)`: a control plane of the test's own with the API server's audit log on, so requests
  can be counted per client, verb and object (audit_log.py; a fault must never be injected into the shared session
  cluster).
* agents playing kwok nodes with a fixture host root, kernel lines written into their /dev/kmsg.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.e2e.agent_harness import BUILTINS, condition
from tests.e2e.conftest import LocalCluster, _started
from tests.e2e.fake_host import host_root
from tests.e2e.remediator_harness import terminate
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
HUNG = "INFO: task jbd2/sda1-8:412 blocked for more than 120 seconds."
READ_ONLY = "EXT4-fs (sda1): Remounting filesystem read-only"


class Figures:
    def __init__(self, scenario: str, config: pytest.Config, record: Any) -> None:
        self.scenario, self.record = scenario, record
        self.reporter = config.pluginmanager.get_plugin("terminalreporter")
        self.capture = config.pluginmanager.get_plugin("capturemanager")
        self.values: dict[str, object] = {}

    def __call__(self, name: str, value: object, unit: str = "") -> None:
        self.values[name] = value
        text = f"{value:.2f}" if isinstance(value, float) else str(value)
        line = f"[chaos] {self.scenario}: {name} = {text}{(' ' + unit) if unit else ''}"
        if self.reporter is not None and self.capture is not None:
            with self.capture.global_and_fixture_disabled():  # shown now, not only when the test fails
                self.reporter.write_line(line)
        else:
            print(line, file=sys.stderr)
        self.record(f"chaos:{name}", value)
        out = os.environ.get("NODEMEDIC_CHAOS_FIGURES")
        if out:
            with open(out, "a") as f:
                f.write(json.dumps({"scenario": self.scenario, "name": name, "value": value, "unit": unit}) + "\n")


@contextlib.contextmanager
def audited_cluster(nodes: int) -> Iterator[LocalCluster]:
    with _started(f"pytest-{os.getpid()}-chaos-{secrets.token_hex(2)}", nodes, audit=True) as started:
        yield started


# --- agents playing kwok nodes --------------------------------------------------------------------------------
@dataclass
class Agent:
    node: str
    root: Path
    proc: subprocess.Popen[bytes]
    log: Path
    seq: int = 0

    def kernel(self, message: str) -> None:
        """Append one record in /dev/kmsg format, stamped now (microseconds since the fake boot an hour ago)."""
        self.seq += 1
        btime = int((self.root / "proc" / "stat").read_text().split("btime ")[1].split()[0])
        usec = int((time.time() - btime) * 1e6)
        with open(self.root / "dev" / "kmsg", "a") as f:
            f.write(f"3,{self.seq},{usec},-;{message}\n")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        terminate(self.proc)


def start_agent(cluster: LocalCluster, node: str, tmp: Path, *, heartbeat: str) -> Agent:
    base = tmp / node
    base.mkdir()
    root = host_root(base)
    checks = "\n".join(f"  {c}: {{enabled: false}}" for c in BUILTINS)  # these agents are about their log monitors
    monitors = ", ".join(str(ROOT / "agent" / "defaults" / m) for m in ("kernel-monitor.json", "readonly-monitor.json"))
    config = base / "agent.yaml"
    config.write_text(f"apiVersion: nodemedic.io/v1alpha1\nkind: AgentConfig\nheartbeat: {heartbeat}\n"
                      f"checks:\n{checks}\nsystemLogMonitors: [{monitors}]\nrepair: {{enabled: false}}\n")
    log = base / "agent.log"
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "agent", "run", "--node-name", node, "--kubeconfig", str(cluster.kubeconfig),
             "--config", str(config), "--host-root", str(root), "--listen", ""],
            stdout=out, stderr=subprocess.STDOUT, env=dict(os.environ, PYTHONUNBUFFERED="1"))
    return Agent(node, root, proc, log)


def wait_first_write(core: client.CoreV1Api, agent: Agent, type_: str = "KernelDeadlock") -> None:
    def written() -> bool:
        if not agent.alive():
            pytest.fail(f"agent {agent.node} exited:\n{agent.log.read_text()[-3000:]}")
        return condition(core, agent.node, type_) is not None

    wait_until(written, timeout=60, what=f"agent {agent.node}'s first status write")
