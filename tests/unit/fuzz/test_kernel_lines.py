"""Fuzz: whatever the kernel log holds, the shipped log monitors never raise, and report only what they declare."""

from __future__ import annotations

import asyncio
import datetime as dt
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent.checks.logmonitor import LogMonitor
from agent.host import HostRoot
from agent.model import Status
from agent.npd.logmonitor_config import DEFAULTS_DIR, load
from tests.unit.fuzz.strategies import FUZZ

BOOT = dt.datetime(2025, 3, 1, 8, 0, tzinfo=dt.UTC)
NOW = BOOT + dt.timedelta(days=2)
CONFIGS = [load(DEFAULTS_DIR / "kernel-monitor.json"), load(DEFAULTS_DIR / "readonly-monitor.json")]

# Lines the shipped rules are written for, to be cut, spliced and garbled.
KNOWN = [
    "INFO: task jbd2/sda1-8:412 blocked for more than 120 seconds.",
    "Out of memory: Killed process 1234 (stress-ng) total-vm:1048576kB, anon-rss:1000000kB, file-rss:4kB",
    "EXT4-fs (sda1): Remounting filesystem read-only",
    "EXT4-fs error (device sda1): ext4_find_entry:1455: inode #2: comm ls: reading directory lblock 0",
    "XFS (dm-0): Corruption detected. Unmount and run xfs_repair",
    "BUG: soft lockup - CPU#3 stuck for 23s! [kworker/3:1:1234]",
    "Buffer I/O error on dev sdb1, logical block 0, async page read",
    "unregister_netdevice: waiting for eth0 to become free. Usage count = 1",
    "      Not tainted 4.19.0-18-amd64 #1 Debian 4.19.208-1",
]

messages = st.one_of(
    st.sampled_from(KNOWN),
    st.builds(lambda known, at, junk: known[:at] + junk + known[at:], st.sampled_from(KNOWN), st.integers(0, 80),
              st.text(max_size=30)),
    st.text(max_size=200),
    st.binary(max_size=200).map(lambda b: "".join(f"\\x{x:02x}" for x in b)),  # the kernel's own escaping
)
headers = st.builds(
    lambda prio, seq, usec, flags, extra: f"{prio},{seq},{usec},{flags}{extra}",
    st.one_of(st.integers(0, 191), st.integers(0, 10**30)), st.integers(0, 10**30),
    st.one_of(st.integers(0, 3 * 86400 * 10**6), st.integers(0, 10**30)), st.sampled_from(["-", "c", "+", "", "x;"]),
    st.sampled_from(["", ",caller=T1", ",,,"]),
)
records = st.builds(lambda h, m: (h + ";" + m).encode("utf-8", "surrogatepass"), headers, messages)
lines = st.one_of(records, records.map(lambda r: r + b"\n SUBSYSTEM=block\n DEVICE=b8:0"), st.binary(max_size=300))


@pytest.fixture(scope="module")
def root() -> Iterator[Path]:
    """One fake host for every example (each starts with an empty /dev/kmsg and new monitors)."""
    with tempfile.TemporaryDirectory(prefix="fuzz-kmsg-") as d:
        host = Path(d)
        (host / "proc").mkdir()
        (host / "proc" / "stat").write_text(f"cpu  1 0 1 1\nbtime {int(BOOT.timestamp())}\n")
        (host / "dev").mkdir()
        yield host


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.Runner]:
    with asyncio.Runner() as runner:
        yield runner


@FUZZ
@given(batches=st.lists(st.lists(lines, max_size=5), min_size=1, max_size=3),
       steps=st.lists(st.integers(0, 10**12), min_size=3, max_size=3))
def test_the_shipped_monitors_never_raise_and_report_only_their_own_types(
        root: Path, loop: asyncio.Runner, batches: list[list[bytes]], steps: list[int]) -> None:
    kmsg = root / "dev" / "kmsg"
    kmsg.write_bytes(b"")
    monitors = [LogMonitor(c, host=HostRoot(root)) for c in CONFIGS]
    now = NOW
    try:
        for batch, step in zip(batches, steps, strict=False):
            with kmsg.open("ab") as f:
                f.write(b"".join(line + b"\n" for line in batch))
            now += dt.timedelta(microseconds=step)
            for monitor, config in zip(monitors, CONFIGS, strict=True):
                seen = loop.run(monitor.observe(now))
                assert not seen.error, seen.error
                assert {c.type for c in seen.conditions} <= set(monitor.condition_types)
                assert all(isinstance(c.status, Status) for c in seen.conditions)
                assert all(c.message for c in seen.conditions if c.status is Status.TRUE)
                assert {e.reason for e in seen.events} <= {r.reason for r in config.rules}
    finally:
        for monitor in monitors:  # a monitor lives as long as the agent, so it has no close(); its reader does
            monitor._reader.close()
