"""One Event per Xid when both the kernel log and NVML tell it."""

from __future__ import annotations

import datetime as dt

from agent.model import EventReport
from agent.reporting.xid_pairs import XidPairs, xid_key

AT = dt.datetime(2026, 5, 1, tzinfo=dt.UTC)
KERNEL = EventReport("NvidiaXid", "NVRM: Xid (PCI:0000:3b:00): 13, pid=4242, name=python3, Graphics Exception")
NVML = EventReport("NvidiaXid", "NVRM: Xid (PCI:0000:3b:00): 13, GPU 0 (00000000:3B:00.0, GPU-a), from NVML's "
                                "event set")


def test_the_key_is_the_gpu_and_the_code_in_every_driver_format() -> None:
    assert xid_key(KERNEL.message) == ("0000:3b:00", 13)
    assert xid_key("NVRM: Xid (0000:3B:00): 79, Channel 0000002a") == ("0000:3b:00", 79)
    assert xid_key("NVRM: Xid (PCI:0000:3b:00.0): 48, ...") == ("0000:3b:00", 48)
    assert xid_key("Out of memory: Killed process 1 (a)") is None


def test_the_second_source_telling_the_same_xid_is_dropped_whichever_comes_first() -> None:
    pairs = XidPairs()
    assert pairs.first_telling(KERNEL, source="gpu-monitor", at=AT)
    assert not pairs.first_telling(NVML, source="nvml", at=AT + dt.timedelta(seconds=20))
    assert pairs.first_telling(NVML, source="nvml", at=AT + dt.timedelta(seconds=30))
    assert not pairs.first_telling(KERNEL, source="gpu-monitor", at=AT + dt.timedelta(seconds=31))


def test_one_source_repeating_an_xid_stays_two_events() -> None:
    pairs = XidPairs()
    assert pairs.first_telling(KERNEL, source="gpu-monitor", at=AT)
    assert pairs.first_telling(KERNEL, source="gpu-monitor", at=AT + dt.timedelta(seconds=1))
    assert not pairs.first_telling(NVML, source="nvml", at=AT + dt.timedelta(seconds=5))
    assert not pairs.first_telling(NVML, source="nvml", at=AT + dt.timedelta(seconds=5))
    assert pairs.first_telling(NVML, source="nvml", at=AT + dt.timedelta(seconds=5))


def test_an_xid_told_again_after_the_window_is_a_new_event() -> None:
    pairs = XidPairs()
    assert pairs.first_telling(KERNEL, source="gpu-monitor", at=AT)
    assert pairs.first_telling(NVML, source="nvml", at=AT + dt.timedelta(minutes=3))


def test_another_gpu_or_code_is_never_paired() -> None:
    pairs = XidPairs()
    assert pairs.first_telling(KERNEL, source="gpu-monitor", at=AT)
    other = EventReport("NvidiaXid", NVML.message.replace("3b:00):", "3c:00):"))
    assert pairs.first_telling(other, source="nvml", at=AT)
    assert pairs.first_telling(EventReport("NvidiaXid", NVML.message.replace(": 13,", ": 31,")), source="nvml", at=AT)
    assert pairs.first_telling(EventReport("OOMKilling", "Killed process"), source="nvml", at=AT)
