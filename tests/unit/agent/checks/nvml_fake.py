"""A fake of the NVML calls the `nvml` check makes, answering as `pynvml` does: values, or the binding's own
`NVMLError` with NVML's code. Each GPU's answers are plain fields a test changes between looks; a call named in
`errors` raises that code instead (NOT_SUPPORTED for a driver or board without it, GPU_IS_LOST, ...)."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import Any

import pynvml

NOT_SUPPORTED = pynvml.NVML_ERROR_NOT_SUPPORTED
FUNCTION_NOT_FOUND = pynvml.NVML_ERROR_FUNCTION_NOT_FOUND
GPU_IS_LOST = pynvml.NVML_ERROR_GPU_IS_LOST
DRIVER_NOT_LOADED = pynvml.NVML_ERROR_DRIVER_NOT_LOADED


@dataclass
class FakeGpu:
    bus_id: str = "00000000:3B:00.0"
    uuid: str = "GPU-11111111-2222-3333-4444-555555555555"
    volatile_dbe: int = 0
    aggregate_dbe: int = 0
    remapped_rows: tuple[int, int, int, int] = (0, 0, 0, 0)  # correctable, uncorrectable, pending, failure
    retired_pages: list[int] = field(default_factory=list)
    retired_pending: int = 0
    nvlinks: list[int] = field(default_factory=list)  # per link: 1 active, 0 inactive; [] = no NVLink
    nvlink_errors: dict[tuple[int, int], int] = field(default_factory=dict)  # (link, counter) -> value
    pcie_replays: int = 0
    clock_events: int = 0
    fabric: tuple[int, int, int] = (0, 0, 0)  # state, status, healthMask; state 0 = not supported
    errors: dict[str, int] = field(default_factory=dict)  # call name -> NVML error code it raises


@dataclass
class _Data:
    device: Any
    eventData: int  # the binding's field name


class FakeNvml:
    NVMLError = pynvml.NVMLError
    c_nvmlGpuFabricInfo_v2_t = pynvml.c_nvmlGpuFabricInfo_v2_t

    def __init__(self, *gpus: FakeGpu, init_error: int | None = None, xid_supported: bool = True) -> None:
        self.gpus = list(gpus)
        self.init_error = init_error
        self.xid_supported = xid_supported
        self.pending_xids: list[tuple[int, int]] = []  # (GPU index, Xid) waiting in the event set
        self.initialized = False
        self.event_sets_freed = 0
        self.calls = 0

    def _gpu(self, handle: int, call: str) -> FakeGpu:
        self.calls += 1
        gpu = self.gpus[handle]
        if call in gpu.errors:
            raise pynvml.NVMLError(gpu.errors[call])
        return gpu

    def nvmlInit(self) -> None:
        if self.init_error is not None:
            raise pynvml.NVMLError(self.init_error)
        self.initialized = True

    def nvmlShutdown(self) -> None:
        self.initialized = False

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        return index

    def nvmlDeviceGetIndex(self, handle: int) -> int:
        return handle

    def nvmlDeviceGetPciInfo(self, handle: int) -> Any:
        info = pynvml.nvmlPciInfo_t()
        info.busId = self._gpu(handle, "nvmlDeviceGetPciInfo").bus_id.encode()
        return info

    def nvmlDeviceGetUUID(self, handle: int) -> str:
        return self._gpu(handle, "nvmlDeviceGetUUID").uuid

    def nvmlDeviceGetTotalEccErrors(self, handle: int, error_type: int, counter_type: int) -> int:
        gpu = self._gpu(handle, "nvmlDeviceGetTotalEccErrors")
        assert error_type == pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED
        return gpu.volatile_dbe if counter_type == pynvml.NVML_VOLATILE_ECC else gpu.aggregate_dbe

    def nvmlDeviceGetRemappedRows(self, handle: int) -> tuple[int, int, int, int]:
        return self._gpu(handle, "nvmlDeviceGetRemappedRows").remapped_rows

    def nvmlDeviceGetRetiredPages(self, handle: int, cause: int) -> list[int]:
        pages = self._gpu(handle, "nvmlDeviceGetRetiredPages").retired_pages
        return pages if cause == pynvml.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR else []

    def nvmlDeviceGetRetiredPagesPendingStatus(self, handle: int) -> int:
        return self._gpu(handle, "nvmlDeviceGetRetiredPagesPendingStatus").retired_pending

    def nvmlDeviceGetNvLinkState(self, handle: int, link: int) -> int:
        gpu = self._gpu(handle, "nvmlDeviceGetNvLinkState")
        if not gpu.nvlinks:
            raise pynvml.NVMLError(NOT_SUPPORTED)
        if link >= len(gpu.nvlinks):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return gpu.nvlinks[link]

    def nvmlDeviceGetNvLinkErrorCounter(self, handle: int, link: int, counter: int) -> int:
        return self._gpu(handle, "nvmlDeviceGetNvLinkErrorCounter").nvlink_errors.get((link, counter), 0)

    def nvmlDeviceGetPcieReplayCounter(self, handle: int) -> int:
        return self._gpu(handle, "nvmlDeviceGetPcieReplayCounter").pcie_replays

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: int) -> int:
        return self._gpu(handle, "nvmlDeviceGetCurrentClocksEventReasons").clock_events

    def nvmlDeviceGetGpuFabricInfoV(self, handle: int, info: Any) -> int:
        gpu = self._gpu(handle, "nvmlDeviceGetGpuFabricInfoV")
        struct = info._obj  # what ctypes.byref points at
        struct.state, struct.status, struct.healthMask = gpu.fabric
        return pynvml.NVML_SUCCESS

    def nvmlEventSetCreate(self) -> object:
        return ctypes.c_void_p(1)

    def nvmlDeviceRegisterEvents(self, handle: int, event_types: int, event_set: object) -> None:
        assert event_types == pynvml.nvmlEventTypeXidCriticalError
        if not self.xid_supported:
            raise pynvml.NVMLError(NOT_SUPPORTED)

    def nvmlEventSetWait_v2(self, event_set: object, timeout_ms: int) -> _Data:
        assert timeout_ms == 0, "the check never blocks on the event set"
        if not self.pending_xids:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_TIMEOUT)
        index, xid = self.pending_xids.pop(0)
        return _Data(device=index, eventData=xid)

    def nvmlEventSetFree(self, event_set: object) -> None:
        self.event_sets_freed += 1
