"""The shipped GPU monitor (`agent/defaults/gpu-monitor.json`) against NVIDIA driver lines in kmsg record format:
Xid lines of every driver generation, NVSwitch SXid lines, bus loss and the NCCL segfault, with near-misses."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.checks.logmonitor import LogMonitor
from agent.model import Status
from agent.npd.logmonitor_config import DEFAULTS_DIR, load
from tests.unit.agent.checks.test_logmonitor import MINUTE, START, Node, conditions, observe

GPU_MONITOR = DEFAULTS_DIR / "gpu-monitor.json"
FATAL = ("GPUFatalError", "FatalXid")

# (kernel message, expected event reasons, expected (condition, reason) or None)
GPU_LINES: list[tuple[str, list[str], tuple[str, str] | None]] = [
    # Xid 79 with PCI:, pid and name (R470+ drivers).
    ("NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.", ["NvidiaXid"], FATAL),
    # pid/name unknown, as printed from interrupt context.
    ("NVRM: Xid (PCI:0000:86:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) "
     "has been detected on GPU in the framebuffer at partition 6, subpartition 0.", ["NvidiaXid"], FATAL),
    # No pid/name at all.
    ("NVRM: Xid (PCI:0000:07:00): 119, Timeout after 6s of waiting for RPC response from GPU0 GSP! Expected "
     "function 76 (GSP_RM_CONTROL) (0x20802a02 0x8).", ["NvidiaXid"], FATAL),
    # Old drivers: no "PCI:" and a channel number instead of pid/name.
    ("NVRM: Xid (0000:03:00): 62, 0bfd(2ba4) 00000000 00000000", ["NvidiaXid"], FATAL),
    ("NVRM: Xid (PCI:0000:b1:00): 95, pid=50311, name=python, Uncontained: FBHUB. RST: Yes, D-RST: No",
     ["NvidiaXid"], FATAL),
    ("NVRM: Xid (PCI:0000:1a:00): 74, pid=100, name=pt_main_thread, NVLink: fatal error detected on link 3",
     ["NvidiaXid"], FATAL),
    ("NVRM: Xid (PCI:0000:1a:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)",
     ["NvidiaXid"], ("GPUFatalError", "GPURecoveryActionRequired")),
    # Application-level and informational Xids: an event, no condition.
    ("NVRM: Xid (PCI:0000:3b:00): 13, pid=4242, name=python3, Graphics SM Warp Exception on (GPC 1, TPC 0, SM 0): "
     "Out Of Range Address", ["NvidiaXid"], None),
    ("NVRM: Xid (PCI:0000:3b:00): 31, pid=4242, name=python3, Ch 00000010, intr 10000000. MMU Fault: ENGINE GRAPHICS "
     "GPCCLIENT_T1_0 faulted @ 0x7f1e_4b000000. Fault is of type FAULT_PDE ACCESS_TYPE_READ", ["NvidiaXid"], None),
    ("NVRM: Xid (0000:01:00): 8, Channel 00000001", ["NvidiaXid"], None),
    ("NVRM: Xid (PCI:0000:1a:00): 154, GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)",
     ["NvidiaXid"], None),
    # A code that only starts like a fatal one (790 is not 79, 460 is not 46).
    ("NVRM: Xid (PCI:0000:3b:00): 790, pid=1, name=x, made-up code", ["NvidiaXid"], None),
    ("NVRM: Xid (PCI:0000:3b:00): 460, pid=1, name=x, made-up code", ["NvidiaXid"], None),
    # The bus-loss line in its three wordings.
    ("NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.", [], ("GPUFatalError", "GPUFellOffBus")),
    ("NVRM: GPU at 0000:3b:00.0 has fallen off the bus.", [], ("GPUFatalError", "GPUFellOffBus")),
    ("NVRM: The NVIDIA GPU 0000:3b:00.0 (PCI ID: 10de:20b2) installed in this system has fallen off the bus and is "
     "not responding to commands.", [], ("GPUFatalError", "GPUFellOffBus")),
    # The identification lines that precede the first Xid, and driver banners.
    ("NVRM: GPU at PCI:0000:3b:00: GPU-5a6b7c8d-1111-2222-3333-444455556666", [], None),
    ("NVRM: GPU Board Serial Number: 1564720001234", [], None),
    ("NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024", [], None),
    ("NVRM: GPU 0000:3b:00.0: RmInitAdapter failed! (0x26:0xffff:1474)", [], None),
    # NVSwitch: fatal SXid -> condition, non-fatal -> event; the Data continuation line matches nothing.
    ("nvidia-nvswitch3: SXid (PCI:0000:c6:00.0): 24007, Fatal, Link 44 sourcetrack TCEN0 crumbstore ECC "
     "DBE Error", ["NVSwitchSXid"], ("GPUFatalError", "NVSwitchFatalSXid")),
    ("nvidia-nvswitch0: SXid (PCI:0000:86:00.0): 12028, Non-fatal, Link 30 egress non-posted PRIV error (First)",
     ["NVSwitchSXid"], None),
    ("nvidia-nvswitch0: SXid (PCI:0000:86:00.0): 12028, Data {0x50610002, 0x10100030, 0x00000000}", [], None),
    ("nvidia-nvswitch0: open (major=508)", [], None),
    # NCCL dying in its own library (AI nodes), and a segfault elsewhere that is not NCCL's.
    ("python3[88123]: segfault at 7f3b2c000000 ip 00007f3c9a1b2c3d sp 00007ffe2a3b4c50 error 4 in "
     "libnccl.so.2.18.3[7f3c99800000+c800000] likely on CPU 12 (core 6, socket 0)", ["NCCLSegfault"], None),
    ("python3[88123]: segfault at 0 ip 00007f3c9a1b2c3d sp 00007ffe2a3b4c50 error 4 in libc.so.6[7f3c9a000000+195000]",
     [], None),
]


@pytest.mark.parametrize(("line", "events", "condition"), GPU_LINES, ids=[line[:70] for line, _, _ in GPU_LINES])
def test_the_gpu_monitor_recognises_nvidia_driver_lines(
        node: Node, line: str, events: list[str], condition: tuple[str, str] | None) -> None:
    check = LogMonitor(load(GPU_MONITOR), host=node.host)
    observe(check, START)
    node.kernel(line)

    observation = observe(check, START + MINUTE)

    assert observation.error == ""
    assert [e.reason for e in observation.events] == events
    expected = {condition[0]: (Status.TRUE, condition[1])} if condition else {}
    assert conditions(observation) == expected


def test_the_fatal_condition_names_the_gpu_by_its_bus_id(node: Node) -> None:
    check = LogMonitor(load(GPU_MONITOR), host=node.host)
    observe(check, START)
    node.kernel("NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.")

    (report,) = observe(check, START + MINUTE).conditions

    assert "0000:3b:00" in report.message and "79" in report.message


def test_every_gpu_rule_is_exercised_by_the_table() -> None:
    table = [line for line, _, _ in GPU_LINES]
    for rule in load(GPU_MONITOR).rules:
        assert any(rule.regex.search(line) for line in table), f"no table line for {rule.reason}: {rule.pattern}"


@pytest.fixture
def node(tmp_path: Path) -> Node:
    return Node(tmp_path)
