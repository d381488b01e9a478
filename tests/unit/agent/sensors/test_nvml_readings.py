"""One look at a GPU through NVML: values as answered, UNSUPPORTED where the driver or board lacks a call, `Failed`
with NVML's words for any other error or any answer of another shape, and the Xid events waiting in the event set."""

from __future__ import annotations

import ctypes
from typing import Any

import pynvml
import pytest

from agent.sensors.nvml_readings import (
    UNSUPPORTED,
    Fabric,
    Failed,
    Gpu,
    Link,
    RemappedRows,
    Xid,
    drain_xids,
    identify,
    read,
)
from tests.unit.agent.checks.nvml_fake import GPU_IS_LOST, NOT_SUPPORTED, FakeGpu, FakeNvml


def test_a_healthy_gpu_reads_as_answered() -> None:
    fake = FakeGpu(retired_pages=[1, 2], nvlinks=[1, 0], nvlink_errors={(0, 2): 5}, fabric=(3, 0, 0),
                   remapped_rows=(4, 0, 1, 0), pcie_replays=7)
    nvml = FakeNvml(fake)
    gpu = identify(nvml, 0, 0)
    assert gpu == Gpu(0, "00000000:3B:00.0", fake.uuid)
    assert gpu.kernel_pci == "0000:3b:00" and gpu.label == f"GPU 0 (00000000:3B:00.0, {fake.uuid})"
    reading = read(nvml, gpu, 0)
    assert reading.volatile_dbe == 0 and reading.pcie_replays == 7
    assert reading.remapped_rows == RemappedRows(correctable=4, uncorrectable=0, pending=True, failure=False)
    assert reading.retired_pages == 2  # only the double-bit cause answers pages here
    zeros = {"replay": 0, "recovery": 0, "CRC data": 0}
    assert reading.links == {0: Link(active=True, errors={**zeros, "CRC flit": 5}),
                             1: Link(active=False, errors={**zeros, "CRC flit": 0})}
    assert reading.fabric == Fabric(state=3, status=0, health_mask=0)


def test_a_missing_call_is_unsupported_and_a_lost_gpu_is_a_failure_naming_the_call() -> None:
    fake = FakeGpu(errors={"nvmlDeviceGetRemappedRows": NOT_SUPPORTED, "nvmlDeviceGetTotalEccErrors": GPU_IS_LOST})
    reading = read(FakeNvml(fake), Gpu(0, "x", "y"), 0)
    assert reading.remapped_rows is UNSUPPORTED
    assert isinstance(reading.volatile_dbe, Failed)
    assert reading.volatile_dbe.why.startswith("nvmlDeviceGetTotalEccErrors: ")
    assert reading.links is UNSUPPORTED and reading.fabric is UNSUPPORTED  # no NVLink, no fabric: not errors


def test_an_unidentifiable_gpu_still_gets_a_label_and_a_key_of_its_own() -> None:
    fake = FakeGpu(errors={"nvmlDeviceGetPciInfo": GPU_IS_LOST, "nvmlDeviceGetUUID": GPU_IS_LOST})
    nvml = FakeNvml(fake, fake)
    gpu = identify(nvml, 0, 0)
    assert gpu == Gpu(0, None, None, ("bus id: nvmlDeviceGetPciInfo: GPU is lost",
                                      "UUID: nvmlDeviceGetUUID: GPU is lost"))
    assert gpu.label == "GPU 0 (bus id unreadable, UUID unreadable)" and gpu.kernel_pci is None
    assert gpu.key != identify(nvml, 1, 1).key  # before: both "unknown UUID", one GPU's counters for the other's


@pytest.mark.parametrize("bus_id", ["unknown PCI id", "3B00", "", "0000:3b", "00000000:3B:00.0\nx", "00000000:3B:00.9",
                                    "00000000:3B:00.0 ", "000:3B:00.0", "\uff10\uff1000:3B:00.0"])
def test_a_bus_id_in_no_pci_form_is_unreadable_not_a_crash(bus_id: str) -> None:
    gpu = identify(FakeNvml(FakeGpu(bus_id=bus_id)), 0, 0)
    assert (gpu.pci, gpu.kernel_pci) == (None, None)  # before: ValueError out of kernel_pci for the first four
    assert gpu.unreadable[0].startswith("bus id: NVML answered ") and gpu.unreadable[0].endswith(", no PCI bus id")
    assert gpu.uuid == FakeGpu().uuid


def test_a_bus_id_pynvml_cannot_decode_is_unreadable_not_a_crash() -> None:
    gpu = identify(FakeNvml(FakeGpu(bus_id=b"00000000:3B:\xff0.0")), 0, 0)  # pynvml decodes the field as UTF-8
    assert (gpu.pci, gpu.uuid) == (None, FakeGpu().uuid)  # before: UnicodeDecodeError out of the listing
    assert gpu.unreadable == ("bus id: nvmlDeviceGetPciInfo: its busId unreadable: UnicodeDecodeError: 'utf-8' codec "
                              "can't decode byte 0xff in position 12: invalid start byte",)


@pytest.mark.parametrize("bus_id", ["00000000:3B:00.0", "0000:3b:00.1", "00000001:AF:1F.7"])
def test_bus_ids_in_either_domain_width_give_the_kernel_s_form(bus_id: str) -> None:
    gpu = identify(FakeNvml(FakeGpu(bus_id=bus_id)), 0, 0)
    assert gpu.pci == bus_id and gpu.kernel_pci == {"00000000:3B:00.0": "0000:3b:00", "0000:3b:00.1": "0000:3b:00",
                                                    "00000001:AF:1F.7": "0001:af:1f"}[bus_id]


@pytest.mark.parametrize("answer", [
    UnicodeDecodeError("utf-8", b"GPU-\xff", 4, 5, "invalid start byte"),  # pynvml's own decode of the bytes
    "", "GPU-x\nGPUUncorrectableECC=False", "GPU-\u202e", "G" * 97, None, 7, b"GPU-\xff",
], ids=["undecodable", "empty", "newline", "bidi", "too-long", "none", "int", "bytes"])
def test_a_uuid_that_is_no_uuid_is_unreadable(answer: Any) -> None:
    gpu = identify(FakeNvml(FakeGpu(answers={"nvmlDeviceGetUUID": answer})), 2, 0)
    assert gpu.uuid is None and gpu.pci == "00000000:3B:00.0" and gpu.unreadable[0].startswith("UUID: ")
    assert gpu.label == "GPU 2 (00000000:3B:00.0, UUID unreadable)"


@pytest.mark.parametrize(("call", "answer", "field", "words"), [
    ("nvmlDeviceGetRemappedRows", (0, 0, 1), "remapped_rows", "answered (0, 0, 1), not (correctable"),
    ("nvmlDeviceGetRemappedRows", (0, 0, 2, 0), "remapped_rows", "answered (0, 0, 2, 0)"),
    ("nvmlDeviceGetRetiredPages", None, "retired_pages", "answered None, not a list of pages"),
    ("nvmlDeviceGetPcieReplayCounter", -5, "pcie_replays", "answered -5, not a count"),
    ("nvmlDeviceGetPcieReplayCounter", "12", "pcie_replays", "answered '12', not a count"),
    ("nvmlDeviceGetPcieReplayCounter", 2**64, "pcie_replays", "not a count"),
    ("nvmlDeviceGetTotalEccErrors", True, "volatile_dbe", "answered True, not a count"),
    ("nvmlDeviceGetTotalEccErrors", 1.5, "volatile_dbe", "answered 1.5, not a count"),
    ("nvmlDeviceGetRetiredPagesPendingStatus", 3, "retired_pending", "answered 3, not 0 or 1"),
    ("nvmlDeviceGetNvLinkState", 7, "links", "answered 7, not 0 or 1"),
    ("nvmlDeviceGetCurrentClocksEventReasons", -1, "clock_events", "not a count"),
    ("nvmlDeviceGetTotalEccErrors", ctypes.ArgumentError("argument 2: wrong type"), "volatile_dbe",
     "ArgumentError: argument 2: wrong type"),
    ("nvmlDeviceGetPcieReplayCounter", ZeroDivisionError(), "pcie_replays", "ZeroDivisionError: ZeroDivisionError"),
])
def test_an_answer_of_another_shape_or_any_exception_is_failed_naming_the_call(call: str, answer: Any, field: str,
                                                                              words: str) -> None:
    reading = read(FakeNvml(FakeGpu(nvlinks=[1], answers={call: answer})), Gpu(0, "x", "y"), 0)
    value = getattr(reading, field)
    assert isinstance(value, Failed) and value.why.startswith(f"{call}: ") and words in value.why


def test_a_fabric_state_nvml_does_not_know_is_failed_not_a_verdict() -> None:
    reading = read(FakeNvml(FakeGpu(fabric=(9, 0, 0))), Gpu(0, "x", "y"), 0)
    assert isinstance(reading.fabric, Failed) and "no fabric state NVML knows" in reading.fabric.why


def test_a_gpu_without_a_handle_reads_every_value_failed_with_the_reason() -> None:
    handle = Failed("nvmlDeviceGetHandleByIndex: GPU is lost")
    gpu = identify(FakeNvml(FakeGpu()), 1, handle)
    assert gpu == Gpu(1, None, None, ("no handle: nvmlDeviceGetHandleByIndex: GPU is lost",))
    reading = read(FakeNvml(FakeGpu()), gpu, handle)
    lost = Failed("no handle: nvmlDeviceGetHandleByIndex: GPU is lost")
    fields = ("volatile_dbe", "aggregate_dbe", "remapped_rows", "retired_pages", "retired_pending", "links",
              "pcie_replays", "clock_events", "fabric")
    assert {getattr(reading, f) for f in fields} == {lost}


def test_waiting_xids_are_drained_without_blocking() -> None:
    nvml = FakeNvml(FakeGpu(), FakeGpu())
    nvml.pending_xids = [(0, 79), (1, 48)]
    assert drain_xids(nvml, object()) == ([Xid(0, 79), Xid(1, 48)], None)
    assert drain_xids(nvml, object()) == ([], None)


def test_an_xid_nvml_cannot_place_or_read_is_kept_with_the_reason() -> None:
    nvml = FakeNvml(FakeGpu())
    nvml.pending_xids = [(-3, 79), (0, "13"), (0, None)]
    assert drain_xids(nvml, object()) == ([
        Xid(Failed("nvmlDeviceGetIndex: answered -3, not a count"), 79),
        Xid(0, Failed("nvmlEventSetWait_v2: answered '13', not a count")),
        Xid(0, Failed("nvmlEventSetWait_v2: answered None, not a count"))], None)


def test_an_event_set_that_fails_for_another_reason_than_nothing_waiting_says_why() -> None:
    nvml = FakeNvml(FakeGpu())
    nvml.event_wait_error = pynvml.NVMLError(GPU_IS_LOST)
    assert drain_xids(nvml, object()) == ([], Failed("nvmlEventSetWait_v2: GPU is lost", GPU_IS_LOST))
    nvml.event_wait_error = OSError("bad handle")
    assert drain_xids(nvml, object()) == ([], Failed("nvmlEventSetWait_v2: OSError: bad handle"))
