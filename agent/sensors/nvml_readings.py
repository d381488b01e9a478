"""One look at each GPU through NVML: the values the `nvml` check judges, read with the binding's own calls.

Every value is what NVML answered, `UNSUPPORTED` when the driver or this GPU lacks the call (an older driver without
a function, a GPU without NVLink, a board without row remapping: NVML's NOT_SUPPORTED, FUNCTION_NOT_FOUND,
INVALID_ARGUMENT for a link past the last), or `Failed` with words for any other error and for any answer of
another shape than NVML's (see `nvml_answers.py`). Nothing here raises, and nothing here keeps state.

A GPU is known by its NVML index (unique in one listing) and whatever identity NVML could tell: a bus id or UUID
that cannot be read is None, never a placeholder two GPUs could share.
"""

from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass
from typing import Any

from agent.sensors.nvml_answers import (
    UNSUPPORTED,
    Failed,
    Unsupported,
    Value,
    ask,
    counter,
    field,
    flag,
    is_count,
    printable,
    shown,
)

# the check reads these through this module
__all__ = ["UNSUPPORTED", "Failed", "Unsupported", "Value", "ask", "is_count", "shown"]

_NVLINK_COUNTERS = {0: "replay", 1: "recovery", 2: "CRC flit", 3: "CRC data"}  # NVML_NVLINK_ERROR_DL_*
MAX_NVLINKS = 18  # the most links one GPU has (H100/H200 SXM); NVML answers INVALID_ARGUMENT past the last
_VOLATILE, _AGGREGATE, _UNCORRECTED = 0, 1, 1  # NVML_VOLATILE_ECC, NVML_AGGREGATE_ECC, ..._TYPE_UNCORRECTED
_TIMEOUT = 10  # NVML_ERROR_TIMEOUT: no event waiting
_FABRIC_STATES = range(4)  # NVML_GPU_FABRIC_STATE_NOT_SUPPORTED .. _COMPLETED
# NVML's bus id: domain (4 or 8 hex digits), bus, device, function, e.g. 00000000:3B:00.0
_BUS_ID = re.compile(r"([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.[0-7]")
_UUID_SIZE = 96  # NVML_DEVICE_UUID_V2_BUFFER_SIZE: no UUID is longer

GpuKey = tuple[int, str | None, str | None]


@dataclass(frozen=True)
class Gpu:
    index: int  # NVML's index: unique among the GPUs of one listing
    pci: str | None  # NVML's bus id, e.g. 00000000:3B:00.0; None when it could not be read
    uuid: str | None  # None when it could not be read
    unreadable: tuple[str, ...] = ()  # why `pci`, `uuid` or the GPU's handle could not be read, in words

    @property
    def key(self) -> GpuKey:
        """What the check keeps a GPU's counters and streaks under: two GPUs never share one."""
        return self.index, self.pci, self.uuid

    @property
    def label(self) -> str:
        return f"GPU {self.index} ({self.pci or 'bus id unreadable'}, {self.uuid or 'UUID unreadable'})"

    @property
    def kernel_pci(self) -> str | None:
        """The bus id as the driver's kernel log writes it: `0000:3b:00` (4-digit domain, no function); None when
        the bus id could not be read."""
        found = _BUS_ID.fullmatch(self.pci or "")
        if found is None:
            return None
        domain, bus, device = found.groups()
        return f"{domain[-4:]}:{bus}:{device}".lower()


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


def _text(value: object) -> str | None:
    """NVML's text, when it is text: ASCII, printable, not empty."""
    if isinstance(value, bytes):
        try:
            value = value.decode("ascii")
        except UnicodeDecodeError:
            return None
    if isinstance(value, str) and value and value.isascii() and value.isprintable():
        return value
    return None


def identify(nvml: Any, index: int, handle: Value[Any]) -> Gpu:
    """The GPU at `index` as NVML names it; a bus id or UUID NVML could not tell (or told in a shape no bus id or
    UUID has) is None, with the reason in `unreadable`. `handle` is the GPU's handle, or why there is none."""
    if isinstance(handle, Unsupported | Failed):
        why = handle.why if isinstance(handle, Failed) else "nvmlDeviceGetHandleByIndex: not supported"
        return Gpu(index, None, None, (f"no handle: {why}",))
    unreadable: list[str] = []
    info = ask(nvml, nvml.nvmlDeviceGetPciInfo, handle)
    pci = None
    if isinstance(info, Unsupported | Failed):
        unreadable.append(f"bus id: {info.why if isinstance(info, Failed) else 'not supported'}")
    elif isinstance(answer := field("nvmlDeviceGetPciInfo", info, "busId"), Failed):
        unreadable.append(f"bus id: {answer.why}")
    elif (pci := _text(answer)) is None or _BUS_ID.fullmatch(pci) is None:
        pci = None
        unreadable.append(f"bus id: NVML answered {shown(answer)}, no PCI bus id")
    answer = ask(nvml, nvml.nvmlDeviceGetUUID, handle)
    uuid = None
    if isinstance(answer, Unsupported | Failed):
        unreadable.append(f"UUID: {answer.why if isinstance(answer, Failed) else 'not supported'}")
    elif (uuid := _text(answer)) is None or len(uuid) > _UUID_SIZE:
        uuid = None
        unreadable.append(f"UUID: NVML answered {shown(answer)}, no UUID")
    return Gpu(index, pci, uuid, tuple(unreadable))


def read(nvml: Any, gpu: Gpu, handle: Value[Any]) -> Reading:
    if isinstance(handle, Unsupported | Failed):  # no handle: every value of this GPU unknown
        lost = Failed(printable("; ".join(gpu.unreadable), 200))
        return Reading(gpu, lost, lost, lost, lost, lost, lost, lost, lost, lost)
    return Reading(
        gpu=gpu,
        volatile_dbe=_count(nvml, nvml.nvmlDeviceGetTotalEccErrors, handle, _UNCORRECTED, _VOLATILE),
        aggregate_dbe=_count(nvml, nvml.nvmlDeviceGetTotalEccErrors, handle, _UNCORRECTED, _AGGREGATE),
        remapped_rows=_remapped_rows(nvml, handle),
        retired_pages=_retired_pages(nvml, handle),
        retired_pending=flag("nvmlDeviceGetRetiredPagesPendingStatus",
                             ask(nvml, nvml.nvmlDeviceGetRetiredPagesPendingStatus, handle)),
        links=_links(nvml, handle),
        pcie_replays=_count(nvml, nvml.nvmlDeviceGetPcieReplayCounter, handle),
        clock_events=_clock_events(nvml, handle),
        fabric=_fabric(nvml, handle),
    )


def _count(nvml: Any, call: Any, *args: Any) -> Value[int]:
    return counter(getattr(call, "__name__", "NVML call"), ask(nvml, call, *args))


def _remapped_rows(nvml: Any, handle: Any) -> Value[RemappedRows]:
    rows = ask(nvml, nvml.nvmlDeviceGetRemappedRows, handle)
    if isinstance(rows, Unsupported | Failed):
        return rows
    if not (isinstance(rows, tuple | list) and len(rows) == 4 and all(map(is_count, rows)) and rows[2] in (0, 1)
            and rows[3] in (0, 1)):
        return Failed(f"nvmlDeviceGetRemappedRows: answered {shown(rows)}, not (correctable, uncorrectable, "
                      "pending, failure)")
    correctable, uncorrectable, pending, failure = rows
    return RemappedRows(correctable, uncorrectable, bool(pending), bool(failure))


def _retired_pages(nvml: Any, handle: Any) -> Value[int]:
    total = 0
    for cause in (0, 1):  # NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, ..._DOUBLE_BIT_ECC_ERROR
        pages = ask(nvml, nvml.nvmlDeviceGetRetiredPages, handle, cause)
        if isinstance(pages, Unsupported | Failed):
            return pages
        if not isinstance(pages, list | tuple):
            return Failed(f"nvmlDeviceGetRetiredPages: answered {shown(pages)}, not a list of pages")
        total += len(pages)
    return total


def _links(nvml: Any, handle: Any) -> Value[dict[int, Link]]:
    links: dict[int, Link] = {}
    for link in range(MAX_NVLINKS):
        state = flag("nvmlDeviceGetNvLinkState", ask(nvml, nvml.nvmlDeviceGetNvLinkState, handle, link))
        if isinstance(state, Unsupported):
            break  # no NVLink at all, or past the last link
        if isinstance(state, Failed):
            return state
        errors: dict[str, int] = {}
        for number, name in _NVLINK_COUNTERS.items():
            value = _count(nvml, nvml.nvmlDeviceGetNvLinkErrorCounter, handle, link, number)
            if isinstance(value, int):  # a counter this link lacks, or answers badly, is left out: events only
                errors[name] = value
        links[link] = Link(active=state, errors=errors)
    return links if links else UNSUPPORTED


def _clock_events(nvml: Any, handle: Any) -> Value[int]:
    reasons = _count(nvml, nvml.nvmlDeviceGetCurrentClocksEventReasons, handle)
    if isinstance(reasons, Unsupported) and hasattr(nvml, "nvmlDeviceGetCurrentClocksThrottleReasons"):
        return _count(nvml, nvml.nvmlDeviceGetCurrentClocksThrottleReasons, handle)  # its name before driver 535
    return reasons


def _fabric(nvml: Any, handle: Any) -> Value[Fabric]:
    info_type = getattr(nvml, "c_nvmlGpuFabricInfo_v2_t", None)
    if info_type is None:  # a binding older than the fabric calls
        return UNSUPPORTED
    info = info_type()
    answer = ask(nvml, nvml.nvmlDeviceGetGpuFabricInfoV, handle, ctypes.byref(info))
    if isinstance(answer, Unsupported | Failed):
        return answer
    fields: dict[str, Any] = {name: field("nvmlDeviceGetGpuFabricInfoV", info, name)
                              for name in ("state", "status", "healthMask")}
    if not all(map(is_count, fields.values())) or fields["state"] not in _FABRIC_STATES:
        return Failed(f"nvmlDeviceGetGpuFabricInfoV: answered {shown(fields)}, no fabric state NVML knows")
    if fields["state"] == 0:  # NVML_GPU_FABRIC_STATE_NOT_SUPPORTED: a GPU outside an NVLink fabric
        return UNSUPPORTED
    return Fabric(state=fields["state"], status=fields["status"], health_mask=fields["healthMask"])


@dataclass(frozen=True)
class Xid:
    index: Value[int]  # the GPU's NVML index, or why NVML could not tell it
    code: Value[int]


def drain_xids(nvml: Any, event_set: Any, *, limit: int = 64) -> tuple[list[Xid], Failed | None]:
    """Every Xid event waiting in `event_set`, without waiting for more, and the set's failure when waiting on it
    failed for another reason than "nothing waiting" (the next look tries again)."""
    found: list[Xid] = []
    for _ in range(limit):
        data = ask(nvml, nvml.nvmlEventSetWait_v2, event_set, 0)
        if isinstance(data, Failed) and data.code == _TIMEOUT:
            return found, None
        if isinstance(data, Unsupported | Failed):
            return found, data if isinstance(data, Failed) else Failed("nvmlEventSetWait_v2: not supported")
        index = counter("nvmlDeviceGetIndex", ask(nvml, nvml.nvmlDeviceGetIndex, getattr(data, "device", None)))
        found.append(Xid(index, counter("nvmlEventSetWait_v2", getattr(data, "eventData", None))))
    return found, None
