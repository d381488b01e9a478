"""node-problem-detector's journald monitor files, unchanged (tests/testdata/agent/npd/), in the agent playing a kwok
node whose host root holds a real journal written by this machine's systemd-journald: systemd-monitor.json's
temporary rules become Events on the API server, docker-monitor.json's permanent rule a NodeCondition."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from kubernetes import client

from agent.checks import BUILTIN
from tests.e2e.agent_harness import Agent, condition, start_agent
from tests.e2e.conftest import LocalCluster
from tests.real_journal import RealJournal
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e

NPD = Path(__file__).resolve().parents[1] / "testdata" / "agent" / "npd"


def node_events(core: client.CoreV1Api, node: str) -> list[client.CoreV1Event]:
    return [e for e in core.list_namespaced_event("default").items
            if e.involved_object.kind == "Node" and e.involved_object.name == node]


def test_npds_journald_monitors_run_unchanged_against_a_real_journal(
    cluster: LocalCluster, core: client.CoreV1Api, node_pool: Callable[..., list[str]], tmp_path: Path,
    journal: RealJournal, agents: list[Agent],
) -> None:
    (node,) = node_pool(1)
    (journal.root / "proc").mkdir()
    (journal.root / "proc" / "stat").write_text("cpu  1 2 3 4\nbtime 1\n")
    config = tmp_path / "agent.yaml"
    disabled = "\n".join(f"  {name}: {{enabled: false}}" for name in BUILTIN)
    config.write_text(f"apiVersion: nodemedic.io/v1alpha1\nkind: AgentConfig\nchecks:\n{disabled}\n"
                      f"systemLogMonitors: [{NPD / 'systemd-monitor.json'}, {NPD / 'docker-monitor.json'}]\n"
                      "repair: {enabled: false}\n")
    agents.append(agent := start_agent(cluster.kubeconfig, node, journal.root, config, tmp_path / "agent.log"))
    wait_until(lambda: condition(core, node, "CorruptDockerOverlay2") is not None
               or (agent.proc.poll() is not None and pytest.fail(agent.log.read_text()[-3000:])),
               timeout=30, what="the agent's first status write (CorruptDockerOverlay2's default)")

    journal.send("Started kubelet.service - kubelet: The Kubernetes Node Agent.", identifier="systemd",
                  _SYSTEMD_UNIT="init.scope")
    journal.send("Starting containerd.service - containerd container runtime...", identifier="systemd")
    journal.send("Started Kubernetes kubelet.", identifier="kubelet")  # another identifier: not systemd's line
    journal.send("Handler for GET /v1.43/containers/json returned error: readlink /var/lib/docker/overlay2/l/ABC: "
                 "invalid argument", identifier="dockerd")

    corrupt = wait_until(lambda: (c := condition(core, node, "CorruptDockerOverlay2")) and c.status == "True" and c,
                         timeout=30, what="CorruptDockerOverlay2=True from the dockerd journal entry")
    assert corrupt.reason == "CorruptDockerOverlay2"
    events = wait_until(lambda: (e := {x.reason: x for x in node_events(core, node)})
                        and {"KubeletStart", "ContainerdStart"} <= set(e) and e,
                        timeout=30, what="KubeletStart and ContainerdStart Events on the Node")
    assert events["KubeletStart"].message == "Started kubelet.service - kubelet: The Kubernetes Node Agent."
    assert events["KubeletStart"].source.component.endswith("systemd-monitor")
    assert events["KubeletStart"].count == 1  # the kubelet's own "Started" line is not systemd's
    assert "DockerStart" not in events
