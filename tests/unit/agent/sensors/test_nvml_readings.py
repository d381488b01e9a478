"""One look at a GPU through NVML: values as answered, UNSUPPORTED where the driver or board lacks a call, `Failed`
with NVML's words for any other error, and the Xid events waiting in the event set."""

from __future__ import annotations

from agent.sensors.nvml_readings import UNSUPPORTED, Fabric, Failed, Gpu, Link, RemappedRows, drain_xids, identify, read
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


def test_an_unidentifiable_gpu_still_gets_a_label() -> None:
    fake = FakeGpu(errors={"nvmlDeviceGetPciInfo": GPU_IS_LOST, "nvmlDeviceGetUUID": GPU_IS_LOST})
    assert identify(FakeNvml(fake), 3, 0) == Gpu(3, "unknown PCI id", "unknown UUID")


def test_waiting_xids_are_drained_without_blocking() -> None:
    nvml = FakeNvml(FakeGpu(), FakeGpu())
    nvml.pending_xids = [(0, 79), (1, 48)]
    assert drain_xids(nvml, object()) == [(0, 79), (1, 48)]
    assert drain_xids(nvml, object()) == []
