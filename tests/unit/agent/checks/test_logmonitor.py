"""The log monitor: NPD rule semantics over a fixture /dev/kmsg, the shipped rules against several kernels'
wording, lookback, recovery after a quiet period and restart safety. Time comes in as `now`; nothing sleeps."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from pathlib import Path

import pytest

from agent.checks.logmonitor import QUIET_TIMING, WAITING_TIMING, LogMonitor
from agent.host import HostRoot
from agent.model import ConditionReport, EventReport, Observation, Status
from agent.npd.logmonitor_config import DEFAULTS_DIR, LogMonitorConfig, load, loads
from agent.npd.re2 import MAX_MATCHED_BUFFER, MAX_MATCHED_LINE

TESTDATA = Path(__file__).resolve().parents[3] / "testdata" / "agent" / "logmonitor"
KERNEL_MONITOR = DEFAULTS_DIR / "kernel-monitor.json"
READONLY_MONITOR = DEFAULTS_DIR / "readonly-monitor.json"
BOOT = dt.datetime(2025, 3, 1, 8, 0, tzinfo=dt.UTC)
START = BOOT + dt.timedelta(days=2)
MINUTE = dt.timedelta(minutes=1)


class Node:
    """A host root with /proc/stat (boot time) and a /dev/kmsg file the test appends kernel records to."""

    def __init__(self, root: Path, *, btime: bool = True) -> None:
        self.host = HostRoot(root)
        (root / "proc").mkdir()
        (root / "proc" / "stat").write_text(
            "cpu  10 0 10 100 0 0 0 0 0 0\n" + (f"btime {int(BOOT.timestamp())}\n" if btime else ""))
        (root / "dev").mkdir()
        self.kmsg = root / "dev" / "kmsg"
        self.kmsg.write_text("")
        self.seq = 0

    def kernel(self, *messages: str, at: dt.datetime = START) -> None:
        usec = int((at - BOOT) / dt.timedelta(microseconds=1))
        with self.kmsg.open("a") as f:
            for message in messages:
                self.seq += 1
                f.write(f"3,{self.seq},{usec},-;{message}\n")


def observe(monitor: LogMonitor, now: dt.datetime) -> Observation:
    return asyncio.run(monitor.observe(now))


def conditions(observation: Observation) -> dict[str, tuple[Status, str]]:
    return {c.type: (c.status, c.reason) for c in observation.conditions}


@pytest.fixture
def node(tmp_path: Path) -> Node:
    return Node(tmp_path)


# --- the shipped rules against kernel lines from several kernel versions ----------------------------------

K, R = "kernel", "readonly"
# (monitor, kernel line, expected event reasons, expected (condition, reason) or None)
KERNEL_LINES: list[tuple[str, str, list[str], tuple[str, str] | None]] = [
    # OOM: >= 5.1 prints one "Killed process" line; 4.x printed a "Kill process ... sacrifice child" decision first.
    (K, "Out of memory: Killed process 1234 (stress-ng) total-vm:1048576kB, anon-rss:1000000kB, file-rss:4kB, "
        "shmem-rss:0kB, UID:0 pgtables:2000kB oom_score_adj:1000", ["OOMKilling"], None),
    (K, "Memory cgroup out of memory: Killed process 4321 (python3) total-vm:500000kB, anon-rss:250000kB, "
        "file-rss:10000kB, shmem-rss:0kB, UID:0 pgtables:800kB oom_score_adj:999", ["OOMKilling"], None),
    (K, "Out of memory: Killed process 99 (Web Content) total-vm:1kB, anon-rss:1kB, file-rss:0kB, shmem-rss:0kB, "
        "UID:1000 pgtables:4kB oom_score_adj:0", ["OOMKilling"], None),
    (K, "Out of memory: Kill process 1234 (x) score 1 or sacrifice child", [], None),
    (K, "Memory cgroup out of memory: Kill process 1234 (x) score 1000 or sacrifice child", [], None),
    (K, "Killed process 1234 (x) total-vm:8000kB, anon-rss:4000kB, file-rss:0kB, shmem-rss:0kB", ["OOMKilling"], None),
    (K, "Killed process 1234 (x) total-vm:8000kB, anon-rss:4000kB, file-rss:0kB", ["OOMKilling"], None),
    (K, "oom_reaper: reaped process 1234 (stress-ng), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB", [], None),
    (K, "stress-ng invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), order=0, oom_score_adj=1000", [],
     None),
    # Hung tasks: the same line from 4.x to 6.x, followed by a taint line that must not match.
    (K, "INFO: task x:123 blocked for more than 120 seconds.", ["TaskHung"], ("KernelDeadlock", "TaskHung")),
    (K, "      Not tainted 4.19.0-18-amd64 #1 Debian 4.19.208-1", [], None),
    (K, "INFO: task kworker/u16:3:1234 blocked for more than 122 seconds.", ["TaskHung"],
     ("KernelDeadlock", "TaskHung")),
    (K, "      Tainted: G           OE     5.15.0-91-generic #101-Ubuntu", [], None),
    (K, "INFO: task jbd2/nvme0n1p1-8:456 blocked for more than 245 seconds.", ["TaskHung"],
     ("KernelDeadlock", "TaskHung")),
    (K, "      Not tainted 6.8.0-1015-aws #16-Ubuntu", [], None),
    (K, '"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.', [], None),
    (K, "task Web Content:77 blocked for more than 120 seconds.", ["TaskHung"], ("KernelDeadlock", "TaskHung")),
    (K, "INFO: task docker:12345 blocked for more than 120 seconds.", ["TaskHung"], ("KernelDeadlock", "DockerHung")),
    (K, "INFO: task dockerd:2201 blocked for more than 120 seconds.", ["TaskHung"], ("KernelDeadlock", "DockerHung")),
    (K, "INFO: task containerd-shim:3131 blocked for more than 120 seconds.", ["TaskHung"],
     ("KernelDeadlock", "ContainerdHung")),
    (K, "INFO: task containerd:1001 blocked for more than 120 seconds.", ["TaskHung"],
     ("KernelDeadlock", "ContainerdHung")),
    (K, "INFO: task kubelet:900 blocked for more than 120 seconds.", ["TaskHung"], ("KernelDeadlock", "KubeletHung")),
    (K, "INFO: task umount.aufs:21568 blocked for more than 120 seconds.", ["TaskHung"],
     ("KernelDeadlock", "AUFSUmountHung")),
    # Network device references.
    (K, "unregister_netdevice: waiting for eth0 to become free. Usage count = 1", ["UnregisterNetDevice"], None),
    (K, "unregister_netdevice: waiting for veth1a2b3c to become free. Usage count = 2", ["UnregisterNetDevice"], None),
    # Oopses: 4.x and 5.x+ wording of the cause line; the "Oops: 0000 [#1]" header after it adds nothing.
    (K, "BUG: unable to handle kernel NULL pointer dereference at 0000000000000008", ["KernelOops"], None),
    (K, "BUG: unable to handle kernel paging request at ffffffffc0a1b2c3", ["KernelOops"], None),
    (K, "BUG: kernel NULL pointer dereference, address: 0000000000000008", ["KernelOops"], None),
    (K, "BUG: unable to handle page fault for address: ffffb8d0c0a1b000", ["KernelOops"], None),
    (K, "#PF: supervisor read access in kernel mode", [], None),
    (K, "Oops: 0000 [#1] SMP NOPTI", [], None),
    (K, "Oops: 0002 [#1] PREEMPT SMP PTI", [], None),
    (K, "Unable to handle kernel NULL pointer dereference at virtual address 0000000000000008", ["KernelOops"], None),
    (K, "kernel BUG at fs/ext4/inode.c:2689!", ["KernelOops"], None),
    (K, "invalid opcode: 0000 [#1] SMP PTI", [], None),
    (K, "divide error: 0000 [#1] SMP PTI", ["KernelOops"], None),
    (K, "Oops: divide error: 0000 [#1] PREEMPT SMP NOPTI", ["KernelOops"], None),
    (K, "general protection fault: 0000 [#1] SMP PTI", ["KernelOops"], None),
    (K, "general protection fault, probably for non-canonical address 0xdead000000000100: 0000 [#1] SMP NOPTI",
     ["KernelOops"], None),
    (K, "Oops: general protection fault, probably for non-canonical address 0xdffffc0000000000: 0000 [#1] PREEMPT "
        "SMP KASAN NOPTI", ["KernelOops"], None),
    (K, "WARNING: CPU: 2 PID: 1 at kernel/workqueue.c:3040 check_flush_dependency+0x110/0x130", [], None),
    (K, "watchdog: BUG: soft lockup - CPU#3 stuck for 23s! [kworker/3:1:123]", ["SoftLockup"], None),
    (K, "NMI watchdog: BUG: soft lockup - CPU#0 stuck for 22s! [swapper/0:0]", ["SoftLockup"], None),
    (K, "NMI watchdog: Watchdog detected hard LOCKUP on cpu 5", ["HardLockup"], None),
    # ext4
    (K, "EXT4-fs error (device sda1): ext4_find_entry:1455: inode #2: comm ls: reading directory lblock 0",
     ["Ext4Error"], None),
    (K, "EXT4-fs error (device nvme0n1p1): ext4_validate_block_bitmap:390: comm kworker/u8:2: bg 12: bad block "
        "bitmap checksum", ["Ext4Error"], None),
    (K, "EXT4-fs warning (device sda1): ext4_dx_add_entry:2021: Directory index full!", ["Ext4Warning"], None),
    (K, "EXT4-fs (sda1): mounted filesystem with ordered data mode. Opts: (null)", [], None),
    (K, "EXT4-fs (sda1): error count since last fsck: 3", [], None),
    (K, "EXT4-fs (sda1): Remounting filesystem read-only", [], None),
    # xfs
    (K, "XFS (sdb): Corruption of in-memory data detected.  Shutting down filesystem", ["XfsCorruption"],
     ("XfsShutdown", "XfsHasShutdown")),
    (K, "XFS (sdb): Corruption of in-memory data (0x8) detected at xfs_trans_cancel+0x13c/0x150 "
        "(fs/xfs/xfs_trans.c:1097).  Shutting down filesystem.", ["XfsCorruption"], ("XfsShutdown", "XfsHasShutdown")),
    (K, "XFS (sdb): Log I/O Error Detected. Shutting down filesystem", [], ("XfsShutdown", "XfsHasShutdown")),
    (K, "XFS (dm-0): Filesystem has been shut down due to log error (0x2).", [], ("XfsShutdown", "XfsHasShutdown")),
    (K, "XFS (sdb): Please unmount the filesystem and rectify the problem(s)", [], None),
    (K, "XFS (sdb): Metadata corruption detected at xfs_dinode_verify+0xa0/0x550 [xfs], inode 0x1234 dinode",
     ["XfsCorruption"], None),
    (K, "XFS (sdb1): Mounting V5 Filesystem", [], None),
    # Block I/O: buffer layer, and the request layer with and without the blk_update_request/print_req_error prefix.
    (K, "Buffer I/O error on dev sda1, logical block 0, async page read", ["IOError"], None),
    (K, "Buffer I/O error on device sdb1, logical block 1234", ["IOError"], None),
    (K, "blk_update_request: I/O error, dev sda, sector 0", ["IOError"], None),
    (K, "blk_update_request: I/O error, dev sda, sector 2048 op 0x1:(WRITE) flags 0x800 phys_seg 1 prio class 0",
     ["IOError"], None),
    (K, "print_req_error: I/O error, dev sdb, sector 4096", ["IOError"], None),
    (K, "I/O error, dev sda, sector 0 op 0x0:(READ) flags 0x0 phys_seg 1 prio class 2", ["IOError"], None),
    (K, "critical medium error, dev nvme0n1, sector 123456 op 0x0:(READ) flags 0x80700 phys_seg 1 prio class 2",
     ["IOError"], None),
    (K, "sd 2:0:0:0: [sdb] tag#5 FAILED Result: hostbyte=DID_OK driverbyte=DRIVER_SENSE", [], None),
    # Memory and firmware-reported hardware errors.
    (K, "EDAC MC0: 1 CE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0 (channel:1 slot:0 page:0x12345 "
        "offset:0x0 grain:32 syndrome:0x0 - area:DRAM err_code:0101:0091 socket:0 ha:0 channel_mask:2 rank:1)",
     ["MemoryReadError"], None),
    (K, "EDAC MC1: 1 UE memory read error on CPU_SrcID#1_MC#0_Chan#0_DIMM#0 (channel:0 slot:0 page:0x1 offset:0x0 "
        "grain:32 - err_code:0x00a0:0x0090)", ["MemoryUncorrectableError"], None),
    (K, "mce: [Hardware Error]: Machine check events logged", ["MachineCheck"], None),
    (K, "{1}[Hardware Error]: event severity: corrected", ["CperHardwareErrorCorrected"], None),
    (K, "[Hardware Error]: event severity: recoverable", ["CperHardwareErrorRecoverable"], None),
    (K, "{2}[Hardware Error]: event severity: fatal", [], ("CperHardwareErrorFatal", "CperHardwareErrorFatal")),
    (K, "{1}[Hardware Error]: Hardware error from APEI Generic Hardware Error Source: 0", [], None),
    # Read-only remounts and filesystem shutdowns.
    (R, "EXT4-fs (sda1): Remounting filesystem read-only", [], ("ReadonlyFilesystem", "FilesystemIsReadOnly")),
    (R, "EXT4-fs (dm-0): Remounting filesystem read-only", [], ("ReadonlyFilesystem", "FilesystemIsReadOnly")),
    (R, "EXT2-fs (sdb1): error: remounting filesystem read-only", [],
     ("ReadonlyFilesystem", "FilesystemIsReadOnly")),
    (R, "BTRFS info (device sda1): forced readonly", [], ("ReadonlyFilesystem", "FilesystemIsReadOnly")),
    (R, "BTRFS info (device nvme0n1p2 state EA): forced readonly", [], ("ReadonlyFilesystem", "FilesystemIsReadOnly")),
    (R, "XFS (sdb): Filesystem has been shut down due to log error (0x2).", [],
     ("ReadonlyFilesystem", "XfsFilesystemShutDown")),
    (R, "XFS (sdb): Corruption of in-memory data detected.  Shutting down filesystem", [],
     ("ReadonlyFilesystem", "XfsFilesystemShutDown")),
    (R, "EXT4-fs (sda1): re-mounted. Opts: errors=remount-ro", [], None),
    (R, "EXT4-fs (sda1): mounted filesystem with ordered data mode. Opts: errors=remount-ro", [], None),
    # Conntrack: modern kernels print the prefix twice (pr_fmt + the message), old ones said ip_conntrack.
    (K, "nf_conntrack: nf_conntrack: table full, dropping packet", ["ConntrackFull"], None),
    (K, "nf_conntrack: table full, dropping packet", ["ConntrackFull"], None),
    (K, "ip_conntrack: table full, dropping packet.", ["ConntrackFull"], None),
    (K, "nf_conntrack: default automatic helper assignment has been turned off for security reasons", [], None),
    (K, "nf_conntrack: falling back to vmalloc.", [], None),
    # PIDs and file handles.
    (K, "cgroup: fork rejected by pids controller in /kubepods.slice/kubepods-burstable.slice/"
        "kubepods-burstable-pod1234.slice/cri-containerd-abcdef.scope", ["ForkRejected"], None),
    (K, "cgroup: cgroup2: unknown option \"nsdelegate\"", [], None),
    (K, "VFS: file-max limit 9223372036854775807 reached", ["FileMaxReached"], None),
    (K, "VFS: Disk quotas dquot_6.6.0", [], None),
    # User-space crashes (4.x, 6.x with the CPU suffix) and traps; the kernel's own faults are oopses, not these.
    (K, "nginx[2345]: segfault at 0 ip 000055d2d8a3c0a1 sp 00007ffc8e5b4e10 error 4 in nginx[55d2d8a00000+c7000]",
     ["Segfault"], None),
    (K, "Web Content[777]: segfault at 8 ip 00007f2b1c2d3e4f sp 00007ffd9a8b7c60 error 6 in "
        "libxul.so[7f2b1a000000+5a00000] likely on CPU 3 (core 3, socket 0)", ["Segfault"], None),
    (K, "traps: java[4321] general protection fault ip:7f3e2c0a1b2c sp:7ffd1c2e3f40 error:0 in "
        "libjvm.so[7f3e2b000000+1200000]", ["ProcessTrap"], None),
    (K, "traps: a.out[99] trap divide error ip:4004f6 sp:7ffd5b5c5d50 error:0 in a.out[400000+1000]",
     ["ProcessTrap"], None),
    (K, "potentially unexpected fatal signal 11.", [], None),
    (K, "show_signal_msg: 24 callbacks suppressed", [], None),
    # NVMe: 4.x-5.x and 6.x timeout wording, controller resets and removal.
    (K, "nvme nvme0: I/O 123 QID 4 timeout, aborting", ["NVMeTimeout"], None),
    (K, "nvme nvme1: I/O tag 801 (1321) opcode 0x1 (Write) QID 7 timeout, aborting req_op:WRITE(1) size:131072",
     ["NVMeTimeout"], None),
    (K, "nvme nvme0: I/O 12 QID 0 timeout, reset controller", ["NVMeTimeout"], None),
    (K, "nvme nvme0: controller is down; will reset: CSTS=0xffffffff, PCI_STATUS=0xffff", ["NVMeControllerReset"],
     None),
    (K, "nvme nvme2: Removing after probe failure status: -19", ["NVMeControllerReset"], None),
    (K, "nvme nvme0: 8/0/0 default/read/poll queues", [], None),
    (K, "nvme nvme0: Abort status: 0x0", [], None),
]
MONITOR_FILES = {K: KERNEL_MONITOR, R: READONLY_MONITOR}


@pytest.mark.parametrize(("monitor", "line", "events", "condition"), KERNEL_LINES,
                         ids=[f"{m}:{line[:60]}" for m, line, _, _ in KERNEL_LINES])
def test_the_shipped_rules_recognise_kernel_lines_of_several_versions(
        node: Node, monitor: str, line: str, events: list[str], condition: tuple[str, str] | None) -> None:
    check = LogMonitor(load(MONITOR_FILES[monitor]), host=node.host)
    observe(check, START)
    node.kernel(line)

    observation = observe(check, START + MINUTE)

    assert observation.error == ""
    assert [e.reason for e in observation.events] == events
    assert all(e.message == line for e in observation.events)  # the event carries the whole kernel line
    expected = {condition[0]: (Status.TRUE, condition[1])} if condition else {}
    assert conditions(observation) == expected


@pytest.mark.parametrize("path", [KERNEL_MONITOR, READONLY_MONITOR], ids=lambda p: p.name)
def test_every_shipped_rule_is_exercised_by_the_kernel_line_table(path: Path) -> None:
    table = [line for _, line, _, _ in KERNEL_LINES]
    for rule in load(path).rules:
        assert any(rule.regex.search(line) for line in table), f"no table line for {rule.reason}: {rule.pattern}"


# --- NPD matching semantics ---------------------------------------------------------------------------------

def custom(document: dict[str, object], *, path: str = "custom-monitor.json") -> LogMonitorConfig:
    return loads(json.dumps(document), path=path)


def test_an_npd_multi_line_pattern_fires_once_on_the_line_that_completes_it(node: Node) -> None:
    check = LogMonitor(load(TESTDATA / "npd-kernel-monitor.json"), host=node.host)
    observe(check, START)
    node.kernel("Out of memory: Kill process 1234 (java) score 900 or sacrifice child")
    assert observe(check, START + MINUTE).events == ()

    node.kernel("Killed process 1234 (java) total-vm:8000kB, anon-rss:4000kB, file-rss:0kB, shmem-rss:0kB",
                "an unrelated line")
    observation = observe(check, START + 2 * MINUTE)

    assert observation.events == (EventReport(
        reason="OOMKilling",
        message="Out of memory: Kill process 1234 (java) score 900 or sacrifice child\n"
                "Killed process 1234 (java) total-vm:8000kB, anon-rss:4000kB, file-rss:0kB, shmem-rss:0kB"
                "; see https://example.com/oom"),)


@pytest.mark.parametrize(("buffer_size", "fires"), [(2, False), (3, True)])
def test_a_multi_line_match_needs_every_line_inside_the_buffer(node: Node, buffer_size: int, fires: bool) -> None:
    config = custom({"plugin": "kmsg", "bufferSize": buffer_size,
                     "rules": [{"type": "temporary", "reason": "ABC", "pattern": r"a\nb\nc"}]})
    check = LogMonitor(config, host=node.host)
    observe(check, START)
    node.kernel("a", "b", "c")

    assert [e.reason for e in observe(check, START + MINUTE).events] == (["ABC"] if fires else [])


def test_a_match_must_reach_the_end_of_the_newest_line(node: Node) -> None:
    config = custom({"plugin": "kmsg", "rules": [{"type": "temporary", "reason": "Exact", "pattern": "disk failed"}]})
    check = LogMonitor(config, host=node.host)
    observe(check, START)
    node.kernel("disk failed; retrying", "the disk failed")

    assert [e.message for e in observe(check, START + MINUTE).events] == ["the disk failed"]


def test_skip_list_lines_are_dropped_before_matching(node: Node) -> None:
    check = LogMonitor(load(TESTDATA / "npd-kernel-monitor.json"), host=node.host)
    observe(check, START)
    node.kernel("type=1400 audit: task x:1 blocked for more than 120 seconds.",
                "INFO: task y:2 blocked for more than 120 seconds.")

    assert [e.message for e in observe(check, START + MINUTE).events] == [
        "INFO: task y:2 blocked for more than 120 seconds."]


def test_a_later_rule_for_the_same_condition_sets_the_reason(node: Node) -> None:
    check = LogMonitor(load(KERNEL_MONITOR), host=node.host)
    observe(check, START)
    node.kernel("INFO: task x:1 blocked for more than 120 seconds.")
    assert conditions(observe(check, START + MINUTE))["KernelDeadlock"] == (Status.TRUE, "TaskHung")

    node.kernel("INFO: task dockerd:2 blocked for more than 120 seconds.")
    observation = observe(check, START + 2 * MINUTE)
    assert observation.conditions == (ConditionReport(
        type="KernelDeadlock", status=Status.TRUE, reason="DockerHung",
        message="INFO: task dockerd:2 blocked for more than 120 seconds."),)


# --- history: lookback and delay ------------------------------------------------------------------------------

def test_lookback_replays_recent_history_and_discards_older_records(node: Node) -> None:
    node.kernel("INFO: task old:1 blocked for more than 120 seconds.", at=START - 6 * MINUTE)
    node.kernel("INFO: task recent:2 blocked for more than 120 seconds.", at=START - 4 * MINUTE)
    check = LogMonitor(load(KERNEL_MONITOR), host=node.host)  # lookback 5m

    observation = observe(check, START)

    assert [e.message for e in observation.events] == ["INFO: task recent:2 blocked for more than 120 seconds."]
    assert conditions(observation) == {"KernelDeadlock": (Status.TRUE, "TaskHung")}


def test_history_is_skipped_without_lookback(node: Node) -> None:
    node.kernel("INFO: task recent:2 blocked for more than 120 seconds.", at=START - 1 * MINUTE)
    config = custom({"plugin": "kmsg", "rules": [{"type": "temporary", "reason": "TaskHung",
                                                  "pattern": "task .+ blocked.*"}]})
    check = LogMonitor(config, host=node.host)

    assert observe(check, START).events == ()
    node.kernel("INFO: task new:3 blocked for more than 120 seconds.")
    assert len(observe(check, START + MINUTE).events) == 1


def test_history_is_skipped_when_the_boot_time_is_unknown(tmp_path: Path) -> None:
    node = Node(tmp_path, btime=False)
    node.kernel("INFO: task recent:2 blocked for more than 120 seconds.", at=START - 1 * MINUTE)
    check = LogMonitor(load(KERNEL_MONITOR), host=node.host)

    assert observe(check, START).events == ()
    node.kernel("INFO: task new:3 blocked for more than 120 seconds.")
    assert [e.reason for e in observe(check, START + MINUTE).events] == ["TaskHung"]


def test_a_large_history_is_read_over_several_calls_and_still_filtered(node: Node) -> None:
    filler = "x" * 200
    for minute in range(10, 0, -1):  # 10 to 1 minutes before start: 1.2 MiB, more than one read takes
        node.kernel(*(f"filler {filler}" for _ in range(600)), at=START - minute * MINUTE)
        node.kernel(f"INFO: task t{minute}:1 blocked for more than 120 seconds.", at=START - minute * MINUTE)
    check = LogMonitor(load(KERNEL_MONITOR), host=node.host)  # lookback 5m: from START - 5m on

    first = observe(check, START)
    second = observe(check, START + dt.timedelta(milliseconds=200))

    assert [e.message for e in first.events + second.events] == [
        f"INFO: task t{m}:1 blocked for more than 120 seconds." for m in (5, 4, 3, 2, 1)]
    assert len(first.events) < 5, "the first call stopped at its bound"


def test_delay_ignores_lines_logged_soon_after_boot(node: Node) -> None:
    config = custom({"plugin": "kmsg", "lookback": "1h", "delay": "5m",
                     "rules": [{"type": "temporary", "reason": "Boom", "pattern": "boom"}]})
    check = LogMonitor(config, host=node.host)
    early = BOOT + 2 * MINUTE
    observe(check, early)
    node.kernel("boom", at=BOOT + 3 * MINUTE)
    assert observe(check, BOOT + 3 * MINUTE).events == ()

    node.kernel("boom", at=BOOT + 6 * MINUTE)
    assert len(observe(check, BOOT + 6 * MINUTE).events) == 1


# --- beyond NPD: recovery and restart safety ----------------------------------------------------------------

def test_a_permanent_condition_recovers_after_the_quiet_period(node: Node) -> None:
    check = LogMonitor(load(KERNEL_MONITOR), host=node.host, recover_after=dt.timedelta(minutes=10))
    observe(check, START)
    node.kernel("INFO: task dockerd:2201 blocked for more than 120 seconds.", at=START + MINUTE)
    assert conditions(observe(check, START + MINUTE))["KernelDeadlock"] == (Status.TRUE, "DockerHung")

    node.kernel("INFO: task dockerd:2201 blocked for more than 241 seconds.", at=START + 3 * MINUTE)
    observe(check, START + 3 * MINUTE)  # a repeat restarts the quiet period
    assert conditions(observe(check, START + 12 * MINUTE))["KernelDeadlock"] == (Status.TRUE, "DockerHung")

    recovered = {c.type: c for c in observe(check, START + 13 * MINUTE).conditions}["KernelDeadlock"]
    assert (recovered.status, recovered.reason) == (Status.FALSE, "DockerHungRecovered")
    assert recovered.message.startswith("no new log line matched DockerHung for 10m0s; last: INFO: task dockerd:2201")
    assert conditions(observe(check, START + 60 * MINUTE))["KernelDeadlock"] == (Status.FALSE, "DockerHungRecovered")


def test_a_recovered_condition_goes_true_again_on_a_new_match(node: Node) -> None:
    check = LogMonitor(load(READONLY_MONITOR), host=node.host, recover_after=dt.timedelta(minutes=10))
    observe(check, START)
    node.kernel("EXT4-fs (sda1): Remounting filesystem read-only", at=START)
    observe(check, START)
    assert conditions(observe(check, START + 10 * MINUTE))["ReadonlyFilesystem"][0] is Status.FALSE

    node.kernel("EXT4-fs (sdb1): Remounting filesystem read-only", at=START + 11 * MINUTE)
    assert conditions(observe(check, START + 11 * MINUTE)) == {
        "ReadonlyFilesystem": (Status.TRUE, "FilesystemIsReadOnly")}


def test_without_recover_after_a_condition_stays_true_as_in_npd(node: Node) -> None:
    check = LogMonitor(load(KERNEL_MONITOR), host=node.host, recover_after=None)
    observe(check, START)
    node.kernel("{2}[Hardware Error]: event severity: fatal")
    observe(check, START)

    assert conditions(observe(check, START + 1000 * MINUTE)) == {
        "CperHardwareErrorFatal": (Status.TRUE, "CperHardwareErrorFatal")}


def test_after_a_restart_nothing_is_reported_until_evidence_or_the_quiet_period(node: Node) -> None:
    check = LogMonitor(load(KERNEL_MONITOR), host=node.host, recover_after=dt.timedelta(minutes=10))

    assert observe(check, START).conditions == ()  # the Node keeps what it carries (maybe True from before)
    assert observe(check, START + 9 * MINUTE).conditions == ()

    node.kernel("XFS (dm-0): Filesystem has been shut down due to log error (0x2).", at=START + 9 * MINUTE)
    assert conditions(observe(check, START + 9 * MINUTE)) == {"XfsShutdown": (Status.TRUE, "XfsHasShutdown")}

    assert conditions(observe(check, START + 10 * MINUTE)) == {  # quiet since start: the defaults, except evidence
        "KernelDeadlock": (Status.FALSE, "KernelHasNoDeadlock"),
        "XfsShutdown": (Status.TRUE, "XfsHasShutdown"),
        "CperHardwareErrorFatal": (Status.FALSE, "CperHardwareHasNoFatalError"),
    }


def test_initial_conditions_are_the_config_defaults(node: Node) -> None:
    check = LogMonitor(load(READONLY_MONITOR), host=node.host)
    assert check.initial_conditions() == (ConditionReport(
        type="ReadonlyFilesystem", status=Status.FALSE, reason="FilesystemIsNotReadOnly",
        message="Filesystem is not read-only"),)


# --- errors and identity ------------------------------------------------------------------------------------

def test_a_missing_log_turns_every_condition_unknown_and_recovers_when_it_appears(node: Node) -> None:
    node.kmsg.unlink()
    check = LogMonitor(load(KERNEL_MONITOR), host=node.host)

    failed = observe(check, START)

    assert failed.error == f"{node.kmsg}: No such file or directory"
    assert {c.type: c.status for c in failed.conditions} == {
        "KernelDeadlock": Status.UNKNOWN, "XfsShutdown": Status.UNKNOWN, "CperHardwareErrorFatal": Status.UNKNOWN}
    assert {c.reason for c in failed.conditions} == {"LogUnreadable"}

    node.kmsg.write_text("")
    observe(check, START + MINUTE)
    node.kernel("INFO: task x:1 blocked for more than 120 seconds.")
    observation = observe(check, START + 2 * MINUTE)
    assert observation.error == ""
    assert [e.reason for e in observation.events] == ["TaskHung"]


def test_an_unreadable_log_is_an_error_not_an_exception(node: Node) -> None:
    node.kmsg.unlink()
    node.kmsg.mkdir()  # reading a directory fails with IsADirectoryError
    observation = observe(LogMonitor(load(KERNEL_MONITOR), host=node.host), START)
    assert "Is a directory" in observation.error


def test_a_record_stamped_past_any_date_is_undated_and_the_records_read_with_it_still_count(node: Node) -> None:
    # Found by tests/unit/fuzz: boot + usec past year 9999 raised OverflowError, losing the whole batch read with it.
    check = LogMonitor(load(KERNEL_MONITOR), host=node.host)
    observe(check, START)
    node.kernel("INFO: task a:1 blocked for more than 120 seconds.")
    with node.kmsg.open("a") as f:
        f.write(f"3,99,{10**30},-;INFO: task corrupt:2 blocked for more than 120 seconds.\n")
    node.kernel("INFO: task b:3 blocked for more than 120 seconds.")
    observation = observe(check, START + MINUTE)
    assert [e.message.split(":")[1] for e in observation.events] == [" task a", " task corrupt", " task b"]
    assert conditions(observation) == {"KernelDeadlock": (Status.TRUE, "TaskHung")}


@pytest.mark.parametrize(("key", "replayed"), [("lookback", ["old:1"]), ("delay", [])],
                         ids=["lookback-of-292-years-replays-everything", "delay-of-292-years-matches-nothing"])
def test_the_longest_go_duration_as_lookback_or_delay_is_everything_or_never(
        node: Node, key: str, replayed: list[str]) -> None:
    # Found by tests/unit/fuzz: "9999999999h" raised OverflowError when the monitor started; the loader now refuses
    # what Go refuses, and the longest duration Go accepts must still work.
    node.kernel("INFO: task old:1 blocked for more than 120 seconds.", at=START - 60 * MINUTE)
    config = custom({"plugin": "kmsg", "lookback": "1h30m", key: "2562047h",
                     "rules": [{"type": "temporary", "reason": "TaskHung", "pattern": "task .+ blocked.*"}]})
    check = LogMonitor(config, host=node.host)
    assert [e.message.split(" ")[2] for e in observe(check, START).events] == replayed
    node.kernel("INFO: task new:2 blocked for more than 120 seconds.")
    assert len(observe(check, START + MINUTE).events) == (0 if key == "delay" else 1)


def test_name_timing_and_condition_types_come_from_the_config(node: Node) -> None:
    check = LogMonitor(load(KERNEL_MONITOR), host=node.host)
    assert check.name == "kernel-monitor"
    assert check.timing.interval == dt.timedelta(milliseconds=200)
    assert check.condition_types == ("KernelDeadlock", "XfsShutdown", "CperHardwareErrorFatal")

    nameless = custom({"plugin": "kmsg", "rules": []}, path="/etc/nodemedic/my-rules.json")
    assert LogMonitor(nameless, host=node.host).name == "my-rules"


# --- filelog ------------------------------------------------------------------------------------------------

def test_filelog_translates_syslog_lines_and_applies_lookback_by_their_timestamps(tmp_path: Path) -> None:
    root = tmp_path
    (root / "var" / "log").mkdir(parents=True)
    log = root / "var" / "log" / "kern.log"
    log.write_text(
        "Mar  3 07:40:00 node kernel: [172800.1] Killed process 1 (old) total-vm:1kB, anon-rss:1kB, file-rss:0kB\n"
        "Mar  3 07:55:00 node kernel: [173700.1] Killed process 2 (recent) total-vm:1kB, anon-rss:1kB, file-rss:0kB\n"
        "Mar  3 07:56:00 node systemd[1]: Started something.\n"
        "garbage without a timestamp\n")
    check = LogMonitor(load(TESTDATA / "npd-filelog-monitor.json"), host=HostRoot(root), tz=dt.UTC)
    now = dt.datetime(2025, 3, 3, 8, 0, tzinfo=dt.UTC)  # lookback 10m: from 07:50

    observation = observe(check, now)
    assert observation.events == (EventReport(
        reason="OOMKilling", message="Killed process 2 (recent) total-vm:1kB, anon-rss:1kB, file-rss:0kB"),)

    with log.open("a") as f:
        f.write("Mar  3 08:01:00 node kernel: [174000.2] task docker:7 blocked for more than 120 seconds.\n")
    assert conditions(observe(check, now + MINUTE)) == {"KernelDeadlock": (Status.TRUE, "DockerHung")}


def test_on_the_kmsg_device_the_monitor_waits_for_records_instead_of_polling(tmp_path: Path) -> None:
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "stat").write_text(f"btime {int(BOOT.timestamp())}\n")
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "kmsg").symlink_to("/dev/kmsg")  # the real device, as a pod sees the host's
    monitor = LogMonitor(load(KERNEL_MONITOR), host=HostRoot(tmp_path))
    try:
        assert monitor.input_fd() is None  # nothing opened yet: poll
        observe(monitor, START)

        assert monitor.input_fd() is not None
        assert monitor.timing == WAITING_TIMING
    finally:
        asyncio.run(monitor.close())


def waiting(monitor: LogMonitor, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the monitor's fixture source one that can say when it has input, as the /dev/kmsg device and the
    journal can (the descriptor is never waited on here: only its presence changes the timing)."""
    monkeypatch.setattr(monitor._reader, "fileno", lambda: 0)


def test_a_waiting_monitor_wakes_on_a_timer_only_while_a_quiet_period_runs(
        node: Node, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a source that wakes it, the monitor ticks every 30 s while a condition will change with time alone (the
    defaults' first quiet period, a True condition waiting to recover) and at the idle pace otherwise."""
    quiet = dt.timedelta(minutes=10)
    monitor = LogMonitor(load(KERNEL_MONITOR), host=node.host, recover_after=quiet)
    waiting(monitor, monkeypatch)
    assert conditions(observe(monitor, START)) == {}
    assert monitor.timing == WAITING_TIMING, "the defaults are due once recover_after has passed"
    assert conditions(observe(monitor, START + quiet))["KernelDeadlock"] == (Status.FALSE, "KernelHasNoDeadlock")
    assert monitor.timing == QUIET_TIMING and QUIET_TIMING.interval == dt.timedelta(minutes=5)

    node.kernel("task docker:7 blocked for more than 120 seconds.", at=START + quiet + MINUTE)
    assert conditions(observe(monitor, START + quiet + MINUTE))["KernelDeadlock"] == (Status.TRUE, "DockerHung")
    assert monitor.timing == WAITING_TIMING, "a True condition recovers on a timer"
    recovered = observe(monitor, START + 2 * quiet + MINUTE)
    assert conditions(recovered)["KernelDeadlock"] == (Status.FALSE, "DockerHungRecovered")
    assert monitor.timing == QUIET_TIMING


def test_a_waiting_monitor_that_never_recovers_needs_no_timer_after_its_start(
        node: Node, monkeypatch: pytest.MonkeyPatch) -> None:
    monitor = LogMonitor(load(KERNEL_MONITOR), host=node.host, recover_after=None)
    waiting(monitor, monkeypatch)
    observe(monitor, START)
    assert monitor.timing == QUIET_TIMING


def test_a_waiting_monitor_whose_read_failed_keeps_its_timer(node: Node, monkeypatch: pytest.MonkeyPatch) -> None:
    monitor = LogMonitor(load(KERNEL_MONITOR), host=node.host, recover_after=None)
    waiting(monitor, monkeypatch)
    node.kmsg.unlink()
    node.kmsg.mkdir()
    assert "Is a directory" in observe(monitor, START).error
    assert monitor.timing == WAITING_TIMING, "looked at again on the timer, not only when a line comes"


# --- hostile lines: matching is linear (RE2) and bounded per line and per buffer (issue 25) ----------------------

def test_a_nested_quantifier_on_a_kernel_line_completes_and_matches_as_re2_does(node: Node) -> None:
    # `(a+)+b` on a 40-byte line hung the whole agent on Python's backtracking re (2^40 ways to fail); RE2 answers
    # in one pass. The test finishing is the point; the events say the answer is right.
    config = custom({"plugin": "kmsg", "rules": [{"type": "temporary", "reason": "Nested", "pattern": "(a+)+b"}]})
    check = LogMonitor(config, host=node.host)
    observe(check, START)
    node.kernel("a" * 40, "a" * 40 + "c", "a" * 40 + "b")

    assert [e.message for e in observe(check, START + MINUTE).events] == ["a" * 40 + "b"]


def test_the_shipped_probe_failure_storm_pattern_on_a_line_repeating_its_phrase_completes() -> None:
    # ~20 s per search on Python's re for a line that repeats its phrase 8 times (and the rule spans lines, so it
    # searched the whole buffer at every line): now one linear pass, with the answer NPD's Go regexp gives.
    (rule,) = [r for r in load(DEFAULTS_DIR / "kubelet-journal-monitor.json").rules if r.reason == "ProbeFailureStorm"]
    phrase = '"Probe failed" probeType="Liveness" pod="shop/web-1" '
    one_line = phrase * 8
    assert rule.spans_lines
    assert rule.regex.search(one_line) is None, "one line, however repetitive, is not a storm of five"
    assert rule.regex.search("\n".join([one_line] * 5)) is not None
    assert rule.regex.search("\n".join([one_line] * 4)) is None


def test_a_line_is_matched_on_its_first_16_kib_and_a_longer_one_still_counts(node: Node) -> None:
    config = custom({"plugin": "kmsg", "rules": [
        {"type": "temporary", "reason": "Head", "pattern": "task .+:\\d+ blocked for more than \\d+ seconds\\..*"},
        {"type": "temporary", "reason": "Tail", "pattern": "the very end"}]})
    check = LogMonitor(config, host=node.host)
    observe(check, START)
    dump = "x" * (MAX_MATCHED_LINE * 4)
    node.kernel("INFO: task kworker:7 blocked for more than 120 seconds. " + dump + " the very end")

    (event,) = observe(check, START + MINUTE).events
    assert event.reason == "Head" and len(event.message) == MAX_MATCHED_LINE, "only the first 16 KiB are read"


def test_a_multi_line_rule_searches_the_newest_lines_up_to_the_buffer_bound(node: Node) -> None:
    config = custom({"plugin": "kmsg", "bufferSize": 1000,
                     "rules": [{"type": "temporary", "reason": "Pair", "pattern": "first\\n(?:.*\\n)*last"}]})
    check = LogMonitor(config, host=node.host)
    observe(check, START)
    filler = "y" * (MAX_MATCHED_LINE - 1)
    lines_in_bound = MAX_MATCHED_BUFFER // MAX_MATCHED_LINE
    node.kernel("first", *[filler] * (lines_in_bound + 1), "last")  # "first" is past the bound: not searched
    node.kernel("first", *[filler] * (lines_in_bound - 2), "last")  # within it
    assert [e.reason for e in observe(check, START + MINUTE).events] == ["Pair"]
