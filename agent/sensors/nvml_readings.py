"""One look at each GPU through NVML: the values the `nvml` check judges, read with the binding's own calls.

Every value is what NVML answered, `UNSUPPORTED` when the driver or this GPU lacks the call (an older driver without
a function, a GPU without NVLink, a board without row remapping: NVML's NOT_SUPPORTED, FUNCTION_NOT_FOUND,
INVALID_ARGUMENT for a link past the last), or `Failed` with NVML's words for any other error (the GPU is lost, the
library does not match the kernel module). Nothing here raises for an NVML error, and nothing here keeps state.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, Union

T = TypeVar("T")

# NVML's return codes that mean "this GPU or driver has no such thing", not "something is wrong".
_ABSENT = frozenset({3, 13, 2})  # NOT_SUPPORTED, FUNCTION_NOT_FOUND, INVALID_ARGUMENT
_NVLINK_COUNTERS = {0: "replay", 1: "recovery", 2: "CRC flit", 3: "CRC data"}  # NVML_NVLINK_ERROR_DL_*
MAX_NVLINKS = 18  # the most links one GPU has (H100/H200 SXM); NVML answers INVALID_ARGUMENT past the last
_VOLATILE, _AGGREGATE, _UNCORRECTED = 0, 1, 1  # NVML_VOLATILE_ECC, NVML_AGGREGATE_ECC, ..._TYPE_UNCORRECTED


class Unsupported:
    def __repr__(self) -> str:
        return "UNSUPPORTED"


UNSUPPORTED = Unsupported()


@dataclass(frozen=True)
class Failed:
    why: str


# `Union`, not `|`: a generic alias over a TypeVar that mypy understands on Python 3.11 (no `type` statement)
Value = Union[T, Unsupported, Failed]  # noqa: UP007


@dataclass(frozen=True)
class Gpu:
    index: int
    pci: str  # NVML's bus id, e.g. 00000000:3B:00.0
    uuid: str

    @property
    def label(self) -> str:
        return f"GPU {self.index} ({self.pci}, {self.uuid})"

    @property
    def kernel_pci(self) -> str:
        """The bus id as the driver's kernel log writes it: `0000:3b:00` (4-digit domain, no function)."""
        domain, bus, rest = self.pci.lower().split(":", 2)
        return f"{domain[-4:]}:{bus}:{rest.split('.')[0]}"


@dataclass(frozen=True)
class RemappedRows:
    correctable: int
    uncorrectable: int
    pending: bool  # remapped, the GPU needs a reset to use the spare rows
    failure: bool  # a row could not be remapped: no spare left


@dataclass(frozen=True)
class Link:
    active: bool
    errors: dict[str, int]  # counter name -> value, for the counters this link answers


@dataclass(frozen=True)
class Fabric:
    state: int  # NVML_GPU_FABRIC_STATE_*
    status: int  # an nvmlReturn_t: the registration's result once COMPLETED
    health_mask: int


@dataclass(frozen=True)
class Reading:
    gpu: Gpu
    volatile_dbe: Value[int]
    aggregate_dbe: Value[int]
    remapped_rows: Value[RemappedRows]
    retired_pages: Value[int]
    retired_pending: Value[bool]
    links: Value[dict[int, Link]]
    pcie_replays: Value[int]
    clock_events: Value[int]
    fabric: Value[Fabric]


def ask(nvml: Any, call: Callable[..., T], *args: Any) -> Value[T]:
    try:
        return call(*args)
    except nvml.NVMLError as exc:
        if getattr(exc, "value", None) in _ABSENT:
            return UNSUPPORTED
        return Failed(f"{call.__name__}: {exc}")


def text(value: bytes | str) -> str:
    return value.decode("ascii", "replace") if isinstance(value, bytes) else value


def identify(nvml: Any, index: int, handle: Any) -> Gpu:
    pci = ask(nvml, nvml.nvmlDeviceGetPciInfo, handle)
    uuid = ask(nvml, nvml.nvmlDeviceGetUUID, handle)
    return Gpu(index=index, pci=text(pci.busId) if not isinstance(pci, Unsupported | Failed) else "unknown PCI id",
               uuid=text(uuid) if isinstance(uuid, bytes | str) else "unknown UUID")


def read(nvml: Any, gpu: Gpu, handle: Any) -> Reading:
    return Reading(
        gpu=gpu,
        volatile_dbe=ask(nvml, nvml.nvmlDeviceGetTotalEccErrors, handle, _UNCORRECTED, _VOLATILE),
        aggregate_dbe=ask(nvml, nvml.nvmlDeviceGetTotalEccErrors, handle, _UNCORRECTED, _AGGREGATE),
        remapped_rows=_remapped_rows(nvml, handle),
        retired_pages=_retired_pages(nvml, handle),
        retired_pending=_bool(ask(nvml, nvml.nvmlDeviceGetRetiredPagesPendingStatus, handle)),
        links=_links(nvml, handle),
        pcie_replays=ask(nvml, nvml.nvmlDeviceGetPcieReplayCounter, handle),
        clock_events=_clock_events(nvml, handle),
        fabric=_fabric(nvml, handle),
    )


def _bool(value: Value[int]) -> Value[bool]:
    return bool(value) if isinstance(value, int) else value


def _remapped_rows(nvml: Any, handle: Any) -> Value[RemappedRows]:
    rows = ask(nvml, nvml.nvmlDeviceGetRemappedRows, handle)
    if isinstance(rows, Unsupported | Failed):
        return rows
    correctable, uncorrectable, pending, failure = rows
    return RemappedRows(correctable, uncorrectable, bool(pending), bool(failure))


def _retired_pages(nvml: Any, handle: Any) -> Value[int]:
    total = 0
    for cause in (0, 1):  # NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, ..._DOUBLE_BIT_ECC_ERROR
        pages = ask(nvml, nvml.nvmlDeviceGetRetiredPages, handle, cause)
        if isinstance(pages, Unsupported | Failed):
            return pages
        total += len(pages)
    return total


def _links(nvml: Any, handle: Any) -> Value[dict[int, Link]]:
    links: dict[int, Link] = {}
    for link in range(MAX_NVLINKS):
        state = ask(nvml, nvml.nvmlDeviceGetNvLinkState, handle, link)
        if isinstance(state, Unsupported):
            break  # no NVLink at all, or past the last link
        if isinstance(state, Failed):
            return state
        errors: dict[str, int] = {}
        for counter, name in _NVLINK_COUNTERS.items():
            value = ask(nvml, nvml.nvmlDeviceGetNvLinkErrorCounter, handle, link, counter)
            if isinstance(value, int):
                errors[name] = value
        links[link] = Link(active=bool(state), errors=errors)
    return links if links else UNSUPPORTED


def _clock_events(nvml: Any, handle: Any) -> Value[int]:
    reasons = ask(nvml, nvml.nvmlDeviceGetCurrentClocksEventReasons, handle)
    if isinstance(reasons, Unsupported) and hasattr(nvml, "nvmlDeviceGetCurrentClocksThrottleReasons"):
        return ask(nvml, nvml.nvmlDeviceGetCurrentClocksThrottleReasons, handle)  # its name before driver 535
    return reasons


def _fabric(nvml: Any, handle: Any) -> Value[Fabric]:
    info = nvml.c_nvmlGpuFabricInfo_v2_t()
    answer = ask(nvml, nvml.nvmlDeviceGetGpuFabricInfoV, handle, ctypes.byref(info))
    if isinstance(answer, Unsupported | Failed):
        return answer
    if info.state == 0:  # NVML_GPU_FABRIC_STATE_NOT_SUPPORTED: a GPU outside an NVLink fabric
        return UNSUPPORTED
    return Fabric(state=int(info.state), status=int(info.status), health_mask=int(info.healthMask))


def drain_xids(nvml: Any, event_set: Any, *, limit: int = 64) -> list[tuple[int, int]]:
    """(GPU index, Xid) of every Xid event waiting in `event_set`, without waiting for more."""
    found: list[tuple[int, int]] = []
    for _ in range(limit):
        try:
            data = nvml.nvmlEventSetWait_v2(event_set, 0)
        except nvml.NVMLError:  # NVML_ERROR_TIMEOUT: nothing waiting (or the set broke: the next look retries)
            break
        index = ask(nvml, nvml.nvmlDeviceGetIndex, data.device)
        found.append((index if isinstance(index, int) else -1, int(data.eventData)))
    return found
