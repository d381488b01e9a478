"""Agents that carry out repair asks on kwok nodes (a fake host root each), for the repair e2e tests.

The agent is the real one, run as a process per kwok node, with repair on and its commands pointed at small scripts:
a restart appends a line to the node's command log and exits with the code the test chose; a reboot does to the
agent what a reboot does (a new boot id, the agent's process killed) and the test starts the agent again, as the
kubelet restarts the agent's pod on a rebooted node."""

from __future__ import annotations

import json
import signal
from dataclasses import dataclass
from pathlib import Path

from kubernetes import client

from tests.e2e.agent_harness import BUILTINS, Agent, start_agent
from tests.e2e.fake_host import host_root

REPAIR = "nodemedic.io/repair"


@dataclass
class RepairingAgent:
    node: str
    root: Path
    config: Path
    log: Path
    kubeconfig: Path
    agent: Agent

    @property
    def commands(self) -> list[str]:
        """The command log: one line per restart or reboot the agent ran."""
        path = self.root / "commands.log"
        return path.read_text().splitlines() if path.exists() else []

    def boot_id(self) -> str:
        return (self.root / "boot_id").read_text().strip()

    def exited(self) -> bool:
        return self.agent.proc.poll() is not None

    def start_again(self) -> None:
        """As the kubelet restarts the agent's pod after the node came back."""
        self.agent = start_agent(self.kubeconfig, self.node, self.root, self.config, self.log)

    def stop(self) -> None:
        self.agent.stop(signal.SIGTERM)


def repairing_agent(tmp: Path, kubeconfig: Path, node: str, *, restart_exit: int = 0) -> RepairingAgent:
    base = tmp / node
    root = host_root(base)
    (root / "boot_id").write_text("00000000-0000-4000-8000-000000000001\n")
    log = root / "commands.log"
    restart = base / "restart.sh"
    restart.write_text(f"#!/bin/sh\necho \"$(date +%s.%N) restart $1\" >> {log}\nexit {restart_exit}\n")
    # A reboot: a new boot id, and the agent's process gone with the node (its parent, which ran this script).
    reboot = base / "reboot.sh"
    reboot.write_text(f"#!/bin/sh\necho \"$(date +%s.%N) reboot\" >> {log}\n"
                      f"cat /proc/sys/kernel/random/uuid > {root / 'boot_id'}\nkill -KILL $PPID\n")
    for script in (restart, reboot):
        script.chmod(0o755)
    checks = "\n".join(f"  {name}: {{enabled: false}}" for name in BUILTINS)
    config = base / "agent.yaml"
    config.write_text(f"""apiVersion: nodemedic.io/v1alpha1
kind: AgentConfig
heartbeat: 1m
checks:
{checks}
systemLogMonitors: []
repair:
  enabled: true
  hostCommandPrefix: []
  commands:
    restart: {{kubelet: [{restart}, kubelet], containerd: [{restart}, containerd], crio: null}}
    reboot: [{reboot}]
  commandTimeout: 30s
  bootIdPath: /boot_id
""")
    agent_log = base / "agent.log"
    return RepairingAgent(node, root, config, agent_log, kubeconfig,
                          start_agent(kubeconfig, node, root, config, agent_log))


def ladder(core: client.CoreV1Api, node: str) -> dict | None:
    """The node's repair annotation, parsed; None without one."""
    text = (core.read_node(node).metadata.annotations or {}).get(REPAIR)
    return None if text is None else json.loads(text)


def answer(core: client.CoreV1Api, node: str) -> client.V1NodeCondition | None:
    return next((c for c in core.read_node_status(node).status.conditions or [] if c.type == "NodemedicRepair"), None)
