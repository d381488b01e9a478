"""Fuzz: whatever NVML (through the binding) answers, the `nvml` check never raises, a GPU whose answer for a
signal is no answer of NVML's shape makes that signal Unknown (naming the GPU) unless another GPU's problem wins, the
other GPUs' problems are reported as without it, every Xid waiting in the event set comes out as one event, and a
GPU's bus id and UUID (unreadable, malformed, shared with another GPU) never change a verdict.

Inputs: 1-4 fake GPUs (tests/unit/agent/checks/nvml_fake.py) with valid random values; some made "bad": calls that
feed the conditions answer values of another type or range, or raise NVMLError codes, ctypes and decoding errors;
the event-only calls answer anything; identities drawn from valid bus ids/UUIDs, near misses, undecodable bytes,
control characters, empty and duplicated ones, and exceptions.
"""

from __future__ import annotations

import asyncio
import ctypes
import datetime as dt
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pynvml
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.checks.nvml import ECC, FABRIC, NVLINK_DOWN, REMAP_FAILED, SLOWDOWN, Config, NvmlCheck
from agent.host import HostRoot
from agent.model import Observation, Status
from agent.reporting.xid_pairs import xid_key
from tests.unit.agent.checks.nvml_fake import FakeGpu, FakeNvml
from tests.unit.fuzz.strategies import FUZZ

# each example runs the check over several looks twice: fewer examples than FUZZ's floor keep it under ~30 s
NVML_FUZZ = settings(FUZZ, max_examples=min(FUZZ.max_examples, 400))
NOW = dt.datetime(2026, 5, 1, 12, tzinfo=dt.UTC)
HOST = HostRoot(Path("/nonexistent-host-root"))


class _NoWords(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no words")


# exceptions a call can raise that are no "this GPU lacks it": the check must say Unknown, not guess
raised = st.one_of(
    st.sampled_from([pynvml.NVML_ERROR_GPU_IS_LOST, pynvml.NVML_ERROR_UNKNOWN, pynvml.NVML_ERROR_NO_PERMISSION,
                     pynvml.NVML_ERROR_RESET_REQUIRED, pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH, 12345, -1])
    .map(pynvml.NVMLError),
    st.sampled_from([UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"), ctypes.ArgumentError("arg 2"),
                     OSError("ioctl"), RuntimeError("x"), ValueError(), _NoWords()]),
)
# values no NVML call answers for a count or a 0/1 state: other types, negatives, past 64 bits, bools
not_a_count = st.one_of(st.none(), st.booleans(), st.text(max_size=4), st.floats(), st.integers(max_value=-1),
                        st.integers(min_value=2**64, max_value=2**70), st.lists(st.integers(0, 3), max_size=3))
not_a_flag = st.one_of(not_a_count, st.integers(2, 2**64 - 1))
# answers with no place in the check's shapes, per call that feeds a condition, and the condition it feeds
CONDITION_CALLS: dict[str, tuple[str, st.SearchStrategy[Any]]] = {
    "nvmlDeviceGetTotalEccErrors": (ECC, st.one_of(raised, not_a_count)),
    "nvmlDeviceGetRemappedRows": (REMAP_FAILED, st.one_of(
        raised, not_a_count, st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 1)),
        st.tuples(st.integers(0, 3), st.integers(0, 3), not_a_flag, st.integers(0, 1)),
        st.tuples(st.integers(-5, -1), st.integers(0, 3), st.integers(0, 1), st.integers(0, 1)))),
    "nvmlDeviceGetNvLinkState": (NVLINK_DOWN, st.one_of(raised, not_a_flag)),
    "nvmlDeviceGetCurrentClocksEventReasons": (SLOWDOWN, st.one_of(raised, not_a_count)),
    "nvmlDeviceGetGpuFabricInfoV": (FABRIC, raised),
}
anything = st.one_of(raised, not_a_count, st.integers(0, 2**64 - 1), st.lists(st.integers(), max_size=3))
EVENT_CALLS = ("nvmlDeviceGetPcieReplayCounter", "nvmlDeviceGetRetiredPages", "nvmlDeviceGetNvLinkErrorCounter")

good_gpus = st.builds(
    FakeGpu,
    volatile_dbe=st.integers(0, 2), aggregate_dbe=st.integers(0, 5),
    remapped_rows=st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 1), st.integers(0, 1)),
    retired_pages=st.lists(st.integers(0, 9), max_size=2), retired_pending=st.integers(0, 1),
    nvlinks=st.lists(st.integers(0, 1), max_size=3),
    nvlink_errors=st.dictionaries(st.tuples(st.integers(0, 2), st.integers(0, 3)), st.integers(0, 2**64 - 1),
                                  max_size=3),
    pcie_replays=st.integers(0, 2**64 - 1), clock_events=st.sampled_from([0, 0x1, 0x4, 0x8, 0x48, 0x88, 0xFF]),
    fabric=st.tuples(st.integers(0, 3), st.sampled_from([0, 9]), st.sampled_from([0, 0x1, 0x10, 0x300, 0x122])),
)
BUS_ID = "00000000:{:02X}:00.0"
bus_ids = st.one_of(
    st.integers(0, 3).map(BUS_ID.format), st.just("unknown PCI id"), st.just("3B00"), st.just(""),
    st.just("0000:3b:00.0\n"), st.just("00000000:3B:00.9"), st.binary(max_size=16),
    st.text(alphabet="0123456789abcdefABCDEF:.x \x00\n", max_size=18),
)
uuids = st.one_of(st.sampled_from(["GPU-a", "GPU-b", "", "GPU-x\nGPUNVLinkDown=False", "\u202eGPU", "G" * 97]),
                  st.text(max_size=12), st.binary(max_size=8), st.none(), raised)
xids = st.lists(st.tuples(st.integers(-1, 5), st.one_of(st.integers(0, 2**64 - 1), anything)), max_size=4)


def _sane(gpu: FakeGpu, index: int) -> FakeGpu:
    return FakeGpu(**{**gpu.__dict__, "bus_id": BUS_ID.format(index), "uuid": f"GPU-{index}", "answers": {}})


@pytest.fixture(scope="module")
def runner() -> Iterator[asyncio.Runner]:
    """One loop (and its thread pool) for every example: a loop per look costs more than the look."""
    with asyncio.Runner() as running:
        yield running


def _looks(runner: asyncio.Runner, fake: FakeNvml, pending: list[tuple[Any, Any]],
           between: list[int]) -> list[Observation]:
    """Three looks: a baseline, one with the waiting Xids, one after counters rose by `between` per GPU."""
    check = NvmlCheck(Config(slowdown_polls=1), HOST, load=lambda host, dirs: fake)
    seen = []
    for n in range(3):
        if n == 1:
            fake.pending_xids = list(pending)
        if n == 2:
            for gpu, more in zip(fake.gpus, between, strict=True):
                gpu.pcie_replays, gpu.aggregate_dbe = (gpu.pcie_replays + more) % 2**64, gpu.aggregate_dbe + more
        seen.append(runner.run(check.observe(NOW + n * dt.timedelta(seconds=30))))
    return seen


def _parts(obs: Observation, type_: str) -> tuple[Status | None, list[str]]:
    found = next((c for c in obs.conditions if c.type == type_), None)
    if found is None:
        return None, []
    return found.status, found.message.split("; ") if found.status is not Status.FALSE else []


@NVML_FUZZ
@given(gpus=st.lists(good_gpus, min_size=1, max_size=4), data=st.data(), pending=xids)
def test_a_gpu_s_hostile_answers_make_its_signals_unknown_and_leave_the_others_verdicts(
        runner: asyncio.Runner, gpus: list[FakeGpu], data: st.DataObject, pending: list[tuple[Any, Any]]) -> None:
    gpus = [_sane(gpu, i) for i, gpu in enumerate(gpus)]
    bad = data.draw(st.sets(st.integers(0, len(gpus) - 1)), "bad GPUs")
    hostile = [FakeGpu(**gpu.__dict__) for gpu in gpus]
    broken: dict[int, set[str]] = {}  # bad GPU -> condition types one of its calls answered badly
    for i in sorted(bad):
        calls = data.draw(st.sets(st.sampled_from(sorted(CONDITION_CALLS)), min_size=1), f"GPU {i}'s bad calls")
        hostile[i].answers = {call: data.draw(CONDITION_CALLS[call][1], call) for call in calls}
        hostile[i].answers |= data.draw(st.dictionaries(st.sampled_from(EVENT_CALLS), anything), "event calls")
        hostile[i].nvlinks = hostile[i].nvlinks or [1]  # a bad link state is read only where there is a link
        broken[i] = {CONDITION_CALLS[call][0] for call in calls}
    between = data.draw(st.lists(st.integers(0, 3), min_size=len(gpus), max_size=len(gpus)), "counters rise")
    # the reference: the same GPUs with the bad ones answering as healthy GPUs do
    reference = [gpu if i not in bad else FakeGpu(bus_id=gpu.bus_id, uuid=gpu.uuid) for i, gpu in enumerate(gpus)]
    seen = _looks(runner, FakeNvml(*hostile), pending, between)
    expected = _looks(runner, FakeNvml(*reference), pending, between)
    for obs, ref in zip(seen, expected, strict=True):
        assert obs.error == ""
        for type_ in (ECC, REMAP_FAILED, NVLINK_DOWN, SLOWDOWN, FABRIC):
            status, parts = _parts(obs, type_)
            ref_status, ref_parts = _parts(ref, type_)
            bad_labels = tuple(f"GPU {i} (" for i in bad)
            if ref_status is Status.TRUE:  # the healthy GPUs' problems are all still told
                assert status is Status.TRUE and set(ref_parts) <= set(parts), (type_, parts, ref_parts)
            elif status is Status.TRUE:  # a problem found only with the bad answers is a bad GPU's
                assert all(p.startswith(bad_labels) for p in parts), (type_, parts)
            if any(type_ in broken[i] for i in bad):  # a badly answered signal is never False
                assert status is not Status.FALSE, (type_, obs.conditions)
                if status is Status.UNKNOWN:
                    assert any(p.startswith(bad_labels) for p in parts)
    xid_events = [e.message for e in seen[1].events if e.reason == "NvidiaXid"]
    assert len(xid_events) == len(pending)  # every Xid told, none lost or doubled
    for (index, code), message in zip(pending, xid_events, strict=True):
        paired = 0 <= index < len(gpus) and type(code) is int and 0 <= code < 2**64
        assert xid_key(message) == ((f"0000:{index:02x}:00", code) if paired else None), message


@NVML_FUZZ
@given(gpus=st.lists(st.tuples(good_gpus, bus_ids, uuids), min_size=1, max_size=4), pending=xids,
       between=st.lists(st.integers(0, 3), min_size=4, max_size=4))
def test_a_gpu_s_bus_id_and_uuid_whatever_they_are_never_change_a_verdict(
        runner: asyncio.Runner, gpus: list[tuple[FakeGpu, Any, Any]], pending: list[tuple[Any, Any]],
        between: list[int]) -> None:
    hostile = []
    for gpu, bus_id, uuid in gpus:
        answers = {"nvmlDeviceGetUUID": uuid} if isinstance(uuid, BaseException) or uuid is None else {}
        hostile.append(FakeGpu(**{**gpu.__dict__, "bus_id": bus_id, "uuid": uuid, "answers": answers}))
    sane = [_sane(gpu, i) for i, (gpu, _, _) in enumerate(gpus)]
    seen = _looks(runner, FakeNvml(*hostile), pending, between[:len(gpus)])
    expected = _looks(runner, FakeNvml(*sane), pending, between[:len(gpus)])
    for obs, ref in zip(seen, expected, strict=True):
        assert obs.error == ""
        assert [(c.type, c.status, c.reason) for c in obs.conditions] == [
            (c.type, c.status, c.reason) for c in ref.conditions]  # no GPU's counters or links mixed with another's
        assert sorted(e.reason for e in obs.events) == sorted(e.reason for e in ref.events)
        for text in [c.message for c in obs.conditions] + [e.message for e in obs.events]:
            assert text.isprintable(), text  # one line, nothing a driver's text could slip in
            assert not re.search(r"GPU-x\nGPUNVLinkDown", text)
