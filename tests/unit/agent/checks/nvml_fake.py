"""A fake of the NVML calls the `nvml` check makes, answering as `pynvml` does: values, or the binding's own
`NVMLError` with NVML's code. Each GPU's answers are plain fields a test changes between looks; a call named in
`errors` raises that code instead (NOT_SUPPORTED for a driver or board without it, GPU_IS_LOST, ...), and a call
named in `answers` answers that instead, whatever it is, or raises it when it is an exception: the hostile answers
(a bus id in no PCI form, a UUID pynvml cannot decode, a count of another type) a driver or binding can give."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pynvml

NOT_SUPPORTED = pynvml.NVML_ERROR_NOT_SUPPORTED
FUNCTION_NOT_FOUND = pynvml.NVML_ERROR_FUNCTION_NOT_FOUND
GPU_IS_LOST = pynvml.NVML_ERROR_GPU_IS_LOST
DRIVER_NOT_LOADED = pynvml.NVML_ERROR_DRIVER_NOT_LOADED


@dataclass
class FakeGpu:
    bus_id: str | bytes = "00000000:3B:00.0"  # the `busId` field of NVML's PCI info
    uuid: Any = "GPU-11111111-2222-3333-4444-555555555555"
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
    answers: dict[str, Any] = field(default_factory=dict)  # call name -> its whole answer, or an exception raised


@dataclass
class _Data:
    device: Any
    eventData: Any  # the binding's field name


class FakeNvml:
    NVMLError = pynvml.NVMLError
    c_nvmlGpuFabricInfo_v2_t = pynvml.c_nvmlGpuFabricInfo_v2_t

    def __init__(self, *gpus: FakeGpu, init_error: int | None = None, xid_supported: bool = True) -> None:
        self.gpus = list(gpus)
        self.init_error = init_error
        self.xid_supported = xid_supported
        self.pending_xids: list[tuple[Any, Any]] = []  # (GPU index, Xid) waiting in the event set
        self.count: Any = None  # what nvmlDeviceGetCount answers instead of the number of GPUs
        self.event_wait_error: BaseException | None = None  # raised by nvmlEventSetWait_v2 instead of an event
        self.initialized = False
        self.inits = self.shutdowns = 0
        self.event_sets_freed = 0
        self.calls = 0

    def _gpu(self, handle: int, call: str) -> FakeGpu:
        self.calls += 1
        gpu = self.gpus[handle]
        if call in gpu.errors:
            raise pynvml.NVMLError(gpu.errors[call])
        return gpu

    def _answer(self, handle: int, call: str, usual: Callable[[FakeGpu], Any]) -> Any:
        gpu = self._gpu(handle, call)
        if call not in gpu.answers:
            return usual(gpu)
        answer = gpu.answers[call]
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def nvmlInit(self) -> None:
        if self.init_error is not None:
            raise pynvml.NVMLError(self.init_error)
        self.initialized = True
        self.inits += 1

    def nvmlShutdown(self) -> None:
        self.initialized = False
        self.shutdowns += 1

    def nvmlDeviceGetCount(self) -> Any:
        return len(self.gpus) if self.count is None else self.count

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        if index >= len(self.gpus):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return self._answer(index, "nvmlDeviceGetHandleByIndex", lambda gpu: index)

    def nvmlDeviceGetIndex(self, handle: Any) -> Any:
        return handle

    def nvmlDeviceGetPciInfo(self, handle: int) -> Any:
        def info(gpu: FakeGpu) -> Any:
            answer = pynvml.nvmlPciInfo_t()
            answer.busId = gpu.bus_id.encode() if isinstance(gpu.bus_id, str) else gpu.bus_id
            return answer
        return self._answer(handle, "nvmlDeviceGetPciInfo", info)

    def nvmlDeviceGetUUID(self, handle: int) -> Any:
        return self._answer(handle, "nvmlDeviceGetUUID", lambda gpu: gpu.uuid)

    def nvmlDeviceGetTotalEccErrors(self, handle: int, error_type: int, counter_type: int) -> Any:
        assert error_type == pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED
        return self._answer(handle, "nvmlDeviceGetTotalEccErrors", lambda gpu: gpu.volatile_dbe
                            if counter_type == pynvml.NVML_VOLATILE_ECC else gpu.aggregate_dbe)

    def nvmlDeviceGetRemappedRows(self, handle: int) -> Any:
        return self._answer(handle, "nvmlDeviceGetRemappedRows", lambda gpu: gpu.remapped_rows)

    def nvmlDeviceGetRetiredPages(self, handle: int, cause: int) -> Any:
        return self._answer(handle, "nvmlDeviceGetRetiredPages", lambda gpu: gpu.retired_pages
                            if cause == pynvml.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR else [])

    def nvmlDeviceGetRetiredPagesPendingStatus(self, handle: int) -> Any:
        return self._answer(handle, "nvmlDeviceGetRetiredPagesPendingStatus", lambda gpu: gpu.retired_pending)

    def nvmlDeviceGetNvLinkState(self, handle: int, link: int) -> Any:
        def state(gpu: FakeGpu) -> int:
            if not gpu.nvlinks:
                raise pynvml.NVMLError(NOT_SUPPORTED)
            if link >= len(gpu.nvlinks):
                raise pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
            return gpu.nvlinks[link]
        return self._answer(handle, "nvmlDeviceGetNvLinkState", state)

    def nvmlDeviceGetNvLinkErrorCounter(self, handle: int, link: int, counter: int) -> Any:
        return self._answer(handle, "nvmlDeviceGetNvLinkErrorCounter",
                            lambda gpu: gpu.nvlink_errors.get((link, counter), 0))

    def nvmlDeviceGetPcieReplayCounter(self, handle: int) -> Any:
        return self._answer(handle, "nvmlDeviceGetPcieReplayCounter", lambda gpu: gpu.pcie_replays)

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: int) -> Any:
        return self._answer(handle, "nvmlDeviceGetCurrentClocksEventReasons", lambda gpu: gpu.clock_events)

    def nvmlDeviceGetGpuFabricInfoV(self, handle: int, info: Any) -> Any:
        def fill(gpu: FakeGpu) -> int:
            struct = info._obj  # what ctypes.byref points at
            struct.state, struct.status, struct.healthMask = gpu.fabric
            return pynvml.NVML_SUCCESS
        return self._answer(handle, "nvmlDeviceGetGpuFabricInfoV", fill)

    def nvmlEventSetCreate(self) -> object:
        return ctypes.c_void_p(1)

    def nvmlDeviceRegisterEvents(self, handle: int, event_types: int, event_set: object) -> None:
        assert event_types == pynvml.nvmlEventTypeXidCriticalError
        if not self.xid_supported:
            raise pynvml.NVMLError(NOT_SUPPORTED)

    def nvmlEventSetWait_v2(self, event_set: object, timeout_ms: int) -> _Data:
        assert timeout_ms == 0, "the check never blocks on the event set"
        if self.event_wait_error is not None:
            raise self.event_wait_error
        if not self.pending_xids:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_TIMEOUT)
        index, xid = self.pending_xids.pop(0)
        return _Data(device=index, eventData=xid)

    def nvmlEventSetFree(self, event_set: object) -> None:
        self.event_sets_freed += 1
