"""The agent as a real process playing a kwok node, with a fixture host root: for end-to-end tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from kubernetes import client

from agent.checks import BUILTIN

HUNG = "INFO: task jbd2/sda1-8:412 blocked for more than 120 seconds."

ROOT = Path(__file__).resolve().parents[2]
BUILTINS = tuple(BUILTIN)  # every built-in check, all disabled: these agents are about their log monitors


def condition(core: client.CoreV1Api, node: str, type_: str) -> client.V1NodeCondition | None:
    return next((c for c in core.read_node_status(node).status.conditions or [] if c.type == type_), None)


def write_config(path: Path, monitors: list[str]) -> Path:
    """Repair off: with the default commands an ask from a remediator whose policy has a ladder (the shipped one
    does) would run `systemctl restart` or `systemctl reboot` on this machine, in its PID 1's namespaces. Agents that
    repair run test scripts instead (tests/e2e/repair_harness.py)."""
    checks = "\n".join(f"  {name}: {{enabled: false}}" for name in BUILTINS)
    files = ", ".join(str(ROOT / "agent" / "defaults" / m) for m in monitors)
    path.write_text(f"apiVersion: nodemedic.io/v1alpha1\nkind: AgentConfig\nheartbeat: 1m\n"
                    f"checks:\n{checks}\nsystemLogMonitors: [{files}]\nrepair: {{enabled: false}}\n")
    return path


def kmsg(root: Path, message: str, seq: list[int]) -> None:
    """Append one record in /dev/kmsg format, timestamped now (microseconds since the fake boot)."""
    seq[0] += 1
    usec = int((time.time() - (int(time.time()) - 3600)) * 1e6)
    with open(root / "dev" / "kmsg", "a") as f:
        f.write(f"3,{seq[0]},{usec},-;{message}\n")


@dataclass
class Agent:
    proc: subprocess.Popen[bytes]
    log: Path

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def start_agent(kubeconfig: Path, node: str, root: Path, config: Path, log: Path, *, listen: str = "") -> Agent:
    """`listen`: where it serves /metrics and /healthz (HOST:PORT); none by default."""
    out = open(log, "ab")  # noqa: SIM115 - the process owns it
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent", "run", "--node-name", node, "--kubeconfig", str(kubeconfig),
         "--config", str(config), "--host-root", str(root), "--listen", listen],
        stdout=out, stderr=subprocess.STDOUT, env=dict(os.environ, PYTHONUNBUFFERED="1"))
    return Agent(proc, log)
