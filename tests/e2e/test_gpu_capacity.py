"""GPU presence against the Node's own capacity, end to end: a kwok node whose capacity says 8 nvidia.com/gpu, played
by an agent whose fixture host root has 7 NVIDIA GPUs on its PCI bus (each with its /dev/nvidia<N>). The gpu check
knows nothing of Kubernetes: the count reaches it from the Node objects the agent's reporter reads anyway. When the
Node's capacity drops to 7 (a device plugin registering the GPUs there are), the condition clears."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from kubernetes import client

from hack.kcp.nodes import ALLOCATABLE, CAPACITY
from tests.e2e.agent_harness import BUILTINS, Agent, condition, start_agent
from tests.e2e.conftest import LocalCluster
from tests.e2e.fake_host import host_root
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e

PRESENT = 7


def seven_gpu_host(root: Path) -> None:
    """An HGX board with one of its eight GPUs missing: 7 GPU functions (vendor 0x10de, class 3D controller) bound to
    the nvidia driver, and their device nodes."""
    driver = root / "sys/bus/pci/drivers/nvidia"
    driver.mkdir(parents=True)
    for i in range(PRESENT):
        device = root / "sys/bus/pci/devices" / f"0000:{0x18 + 0x10 * i:02x}:00.0"
        device.mkdir(parents=True)
        (device / "vendor").write_text("0x10de\n")
        (device / "class").write_text("0x030200\n")
        (device / "driver").symlink_to(driver)
        (root / "dev" / f"nvidia{i}").write_text("")
    (root / "dev" / "nvidiactl").write_text("")


def gpu_only_config(path: Path) -> Path:
    checks = "\n".join(f"  {name}: {{enabled: false}}" for name in BUILTINS if name != "gpu")
    path.write_text("apiVersion: nodemedic.io/v1alpha1\nkind: AgentConfig\nheartbeat: 10s\n"
                    f"checks:\n  gpu: {{interval: 1s, timeout: 1s}}\n{checks}\nsystemLogMonitors: []\n"
                    "repair: {enabled: false}\n")
    return path


def test_a_node_promising_more_gpus_than_its_bus_has_is_missing_a_gpu_until_its_capacity_matches(
    cluster: LocalCluster, core: client.CoreV1Api, node_pool: Callable[..., list[str]], tmp_path: Path,
    agents: list[Agent],
) -> None:
    (node,) = node_pool(1, capacity={**CAPACITY, "nvidia.com/gpu": "8"},
                        allocatable={**ALLOCATABLE, "nvidia.com/gpu": "8"})
    assert core.read_node_status(node).status.capacity["nvidia.com/gpu"] == "8"
    root = host_root(tmp_path)
    seven_gpu_host(root)
    agents.append(agent := start_agent(cluster.kubeconfig, node, root, gpu_only_config(tmp_path / "agent.yaml"),
                                       tmp_path / "agent.log"))

    missing = wait_until(lambda: ((c := condition(core, node, "GPUMissing")) and c.status == "True" and c)
                         or (agent.proc.poll() is not None and pytest.fail(agent.log.read_text()[-3000:])),
                         timeout=30, what="GPUMissing=True: capacity 8 nvidia.com/gpu, 7 GPUs on the bus")
    assert missing.reason == "GPUsBelowNodeCapacity"
    assert missing.message.startswith("the Node's capacity is 8 nvidia.com/gpu but 7 NVIDIA GPUs are on the PCI bus: "
                                      "0000:18:00.0, ")

    core.patch_node_status(node, {"status": {"capacity": {"nvidia.com/gpu": "7"},
                                             "allocatable": {"nvidia.com/gpu": "7"}}})

    cleared = wait_until(lambda: (c := condition(core, node, "GPUMissing")) and c.status == "False" and c,
                         timeout=40, what="GPUMissing=False once the Node's capacity says 7 (seen at a heartbeat)")
    assert (cleared.reason, cleared.message) == (
        "AllGPUsPresent", "7 NVIDIA GPUs on the PCI bus, 7 device nodes, Node capacity 7 nvidia.com/gpu")
