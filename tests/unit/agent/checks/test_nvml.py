"""The `nvml` check against a fake of the binding's calls (tests/unit/agent/checks/nvml_fake.py): every signal turns
its condition True and back, counters only report growth, a driver that lacks a call leaves that signal out, and
an NVML error makes it Unknown, never a crash."""

from __future__ import annotations

import asyncio
import ctypes
import dataclasses
import datetime as dt
from pathlib import Path
from typing import Any

import pynvml
import pytest

from agent.bounds import field_problems
from agent.checks.nvml import (
    ECC,
    FABRIC,
    NVLINK_DOWN,
    REMAP_FAILED,
    REMAP_PENDING,
    SLOWDOWN,
    Config,
    NvmlCheck,
    load_host_nvml,
)
from agent.host import HostRoot
from agent.model import Observation, Status
from agent.reporting.xid_pairs import xid_key
from tests.unit.agent.checks.nvml_fake import (
    DRIVER_NOT_LOADED,
    FUNCTION_NOT_FOUND,
    GPU_IS_LOST,
    NOT_SUPPORTED,
    FakeGpu,
    FakeNvml,
)

NOW = dt.datetime(2026, 5, 1, 12, 0, tzinfo=dt.UTC)
HOST = HostRoot(Path("/nonexistent-host-root"))


def check_of(fake: FakeNvml | None, **config: Any) -> NvmlCheck:
    return NvmlCheck(Config(**config), HOST, load=lambda host, dirs: fake)


def look(check: NvmlCheck, at: dt.datetime = NOW) -> Observation:
    return asyncio.run(check.observe(at))


def status(obs: Observation, type_: str) -> Status | None:
    return next((c.status for c in obs.conditions if c.type == type_), None)


def condition(obs: Observation, type_: str) -> Any:
    return next(c for c in obs.conditions if c.type == type_)


def test_a_node_without_the_library_reports_nothing_and_looks_again_only_after_absent_every() -> None:
    loads: list[object] = []

    def load(host: HostRoot, dirs: tuple[str, ...]) -> None:
        loads.append(dirs)

    check = NvmlCheck(Config(), HOST, load=load)
    assert look(check) == Observation("nvml", NOW)
    assert check.timing.interval == dt.timedelta(minutes=5)
    look(check, NOW + dt.timedelta(minutes=1))
    assert len(loads) == 1
    look(check, NOW + dt.timedelta(minutes=5))
    assert len(loads) == 2


def test_the_host_loader_finds_no_library_below_an_empty_host_root(tmp_path: Path) -> None:
    assert load_host_nvml(HostRoot(tmp_path), ("/usr/lib/x86_64-linux-gnu",)) is None


def test_a_library_without_a_loaded_driver_reports_nothing() -> None:
    assert look(check_of(FakeNvml(FakeGpu(), init_error=DRIVER_NOT_LOADED))).conditions == ()


def test_a_broken_driver_is_an_error_not_a_crash() -> None:
    obs = look(check_of(FakeNvml(FakeGpu(), init_error=18)))  # NVML_ERROR_LIB_RM_VERSION_MISMATCH
    assert "NVML" in obs.error and "mismatch" in obs.error.lower()


def test_a_healthy_gpu_reports_every_signal_it_supports_false_naming_the_count() -> None:
    gpu = FakeGpu(nvlinks=[1, 1], fabric=(3, 0, 0))
    obs = look(check_of(FakeNvml(gpu)))
    assert {c.type: c.status for c in obs.conditions} == {
        ECC: Status.FALSE, REMAP_PENDING: Status.FALSE, REMAP_FAILED: Status.FALSE, NVLINK_DOWN: Status.FALSE,
        SLOWDOWN: Status.FALSE, FABRIC: Status.FALSE}
    assert condition(obs, ECC).message == "1 GPUs: no uncorrectable ECC error since the driver loaded"
    assert obs.events == ()


def test_volatile_double_bit_errors_turn_the_condition_true_naming_the_gpu_and_a_reset_clears_it() -> None:
    gpu = FakeGpu()
    fake = FakeNvml(FakeGpu(bus_id="00000000:1A:00.0", uuid="GPU-aaaa"), gpu)
    check = check_of(fake)
    look(check)
    gpu.volatile_dbe, gpu.aggregate_dbe = 2, 7
    obs = look(check)
    ecc = condition(obs, ECC)
    assert (ecc.status, ecc.reason) == (Status.TRUE, "VolatileDoubleBitECC")
    assert ecc.message == ("GPU 1 (00000000:3B:00.0, GPU-11111111-2222-3333-4444-555555555555): 2 uncorrectable ECC "
                           "errors since the driver loaded (7 over the GPU's life)")
    gpu.volatile_dbe = 0  # a GPU reset clears the volatile count; the aggregate stays
    assert status(look(check), ECC) is Status.FALSE


def test_counters_report_only_their_growth_never_the_baseline_and_a_reset_is_a_new_baseline() -> None:
    gpu = FakeGpu(aggregate_dbe=4, pcie_replays=100, retired_pages=[1], remapped_rows=(1, 0, 0, 0),
                  nvlinks=[1], nvlink_errors={(0, 0): 10})
    check = check_of(FakeNvml(gpu))
    assert look(check).events == ()  # the first look is the baseline: old history is no news
    gpu.aggregate_dbe, gpu.pcie_replays, gpu.retired_pages = 5, 130, [1, 2]
    gpu.remapped_rows, gpu.nvlink_errors = (1, 1, 1, 0), {(0, 0): 12, (0, 2): 1}
    events = {e.reason: e.message for e in look(check).events}
    label = "GPU 0 (00000000:3B:00.0, GPU-11111111-2222-3333-4444-555555555555)"
    assert events == {
        "GPUUncorrectableECC": f"{label}: aggregate uncorrectable ECC errors rose from 4 to 5",
        "GPURowsRemapped": f"{label}: remapped rows rose from 1 to 2",
        "GPUPagesRetired": f"{label}: retired pages rose from 1 to 2",
        "GPUPCIeReplays": f"{label}: PCIe replays rose from 100 to 130",
        "GPUNVLinkErrors": f"{label}: NVLink errors: link 0 replay rose from 10 to 12, "
                           "link 0 CRC flit rose from 0 to 1",
    }
    assert look(check).events == ()  # unchanged: nothing new
    gpu.pcie_replays = 3  # counters reset (driver reload): the new baseline, no event
    assert look(check).events == ()
    gpu.pcie_replays = 4
    assert [e.message for e in look(check).events] == [f"{label}: PCIe replays rose from 3 to 4"]


@pytest.mark.parametrize(("rows", "type_", "reason"), [
    ((0, 3, 1, 0), REMAP_PENDING, "RowRemapPending"),
    ((0, 3, 0, 1), REMAP_FAILED, "RowRemapFailure"),
], ids=["pending", "failure"])
def test_row_remapping_pending_or_failed_turns_true_and_back(rows: tuple[int, int, int, int], type_: str,
                                                             reason: str) -> None:
    gpu = FakeGpu()
    check = check_of(FakeNvml(gpu))
    assert status(look(check), type_) is Status.FALSE
    gpu.remapped_rows = rows
    found = condition(look(check), type_)
    assert (found.status, found.reason) == (Status.TRUE, reason)
    assert "3 rows remapped for uncorrectable" in found.message
    gpu.remapped_rows = (0, 3, 0, 0)  # reset done / GPU replaced
    assert status(look(check), type_) is Status.FALSE


def test_gpus_before_row_remapping_report_retired_pages_pending_instead() -> None:
    gpu = FakeGpu(errors={"nvmlDeviceGetRemappedRows": NOT_SUPPORTED}, retired_pages=[7, 8], retired_pending=1)
    obs = look(check_of(FakeNvml(gpu)))
    pending = condition(obs, REMAP_PENDING)
    assert (pending.status, pending.reason) == (Status.TRUE, "RetiredPagesPending")
    assert pending.message.endswith("retired pages wait for a GPU reset (2 retired pages)")
    assert status(obs, REMAP_FAILED) is None  # row remapping unsupported: not reported


def test_an_nvlink_seen_active_going_inactive_turns_true_and_back() -> None:
    gpu = FakeGpu(nvlinks=[1, 1, 0])  # link 2 never came up: unused, not a problem
    check = check_of(FakeNvml(gpu))
    assert status(look(check), NVLINK_DOWN) is Status.FALSE
    gpu.nvlinks = [1, 0, 0]
    down = condition(look(check), NVLINK_DOWN)
    assert (down.status, down.reason) == (Status.TRUE, "NVLinkInactive")
    assert down.message.endswith(": NVLink 1 inactive, active before")
    gpu.nvlinks = [1, 1, 0]
    assert status(look(check), NVLINK_DOWN) is Status.FALSE


@pytest.mark.parametrize(("bits", "reason", "words"), [
    (0x8, "HardwareSlowdown", "HW slowdown"),
    (0x48, "ThermalSlowdown", "HW slowdown, HW thermal slowdown"),
    (0x88, "PowerBrake", "HW slowdown, HW power brake"),
], ids=["hw-slowdown", "thermal", "power-brake"])
def test_a_hardware_slowdown_on_two_looks_in_a_row_turns_true_and_back(bits: int, reason: str, words: str) -> None:
    gpu = FakeGpu(clock_events=bits)
    check = check_of(FakeNvml(gpu))
    assert status(look(check), SLOWDOWN) is Status.FALSE  # one look can be a P-state change
    found = condition(look(check), SLOWDOWN)
    assert (found.status, found.reason) == (Status.TRUE, reason)
    assert found.message.endswith(f": clocks held down by {words} (2 looks in a row)")
    gpu.clock_events = 0x1  # idle
    assert status(look(check), SLOWDOWN) is Status.FALSE


def test_the_software_power_cap_is_an_event_when_it_engages_not_a_condition() -> None:
    gpu = FakeGpu()
    check = check_of(FakeNvml(gpu))
    look(check)
    gpu.clock_events = 0x4
    obs = look(check)
    assert [e.reason for e in obs.events] == ["GPUPowerCapped"]
    assert status(obs, SLOWDOWN) is Status.FALSE
    assert look(check).events == ()  # still capped: said once
    gpu.clock_events = 0
    look(check)
    gpu.clock_events = 0x4
    assert [e.reason for e in look(check).events] == ["GPUPowerCapped"]


@pytest.mark.parametrize(("fabric", "reason"), [
    ((3, 9, 0), "FabricRegistrationFailed"),
    ((3, 0, 0x1), "FabricDegraded"),  # degraded bandwidth
    ((3, 0, 0x10), "FabricDegraded"),  # unhealthy route
    ((3, 0, 0x300), "FabricDegraded"),  # incorrect configuration, code 3
    ((1, 0, 0), "FabricNotRegistered"),
], ids=["registration-failed", "degraded-bw", "route-unhealthy", "bad-config", "not-started"])
def test_fabric_trouble_turns_true_and_a_healthy_fabric_back(fabric: tuple[int, int, int], reason: str) -> None:
    gpu = FakeGpu(fabric=(3, 0, 0x2 | 0x20 | 0x100))  # every health field answered, all good
    check = check_of(FakeNvml(gpu))
    assert status(look(check), FABRIC) is Status.FALSE
    gpu.fabric = fabric
    found = condition(look(check), FABRIC)
    assert (found.status, found.reason) == (Status.TRUE, reason)
    gpu.fabric = (3, 0, 0)
    assert status(look(check), FABRIC) is Status.FALSE


def test_a_gpu_outside_any_nvlink_fabric_and_without_nvlink_reports_neither() -> None:
    obs = look(check_of(FakeNvml(FakeGpu())))
    assert status(obs, FABRIC) is None and status(obs, NVLINK_DOWN) is None


def test_a_driver_that_lacks_every_call_reports_nothing_and_does_not_crash() -> None:
    calls = ("nvmlDeviceGetTotalEccErrors", "nvmlDeviceGetRemappedRows", "nvmlDeviceGetRetiredPages",
             "nvmlDeviceGetRetiredPagesPendingStatus", "nvmlDeviceGetNvLinkState", "nvmlDeviceGetPcieReplayCounter",
             "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetGpuFabricInfoV")
    gpu = FakeGpu(errors=dict.fromkeys(calls, FUNCTION_NOT_FOUND))
    obs = look(check_of(FakeNvml(gpu)))
    assert (obs.conditions, obs.events, obs.error) == ((), (), "")


def test_the_clock_reasons_call_of_older_drivers_is_used_when_the_new_one_is_missing() -> None:
    fake = FakeNvml(FakeGpu(errors={"nvmlDeviceGetCurrentClocksEventReasons": FUNCTION_NOT_FOUND}))
    fake.nvmlDeviceGetCurrentClocksThrottleReasons = lambda handle: 0x40  # type: ignore[attr-defined]
    check = check_of(fake, slowdown_polls=1)
    assert condition(look(check), SLOWDOWN).reason == "ThermalSlowdown"


def test_an_nvml_error_on_one_gpu_is_unknown_while_a_problem_on_another_still_wins() -> None:
    lost = FakeGpu(bus_id="00000000:1A:00.0", uuid="GPU-lost", errors={"nvmlDeviceGetTotalEccErrors": GPU_IS_LOST})
    check = check_of(FakeNvml(lost))
    ecc = condition(look(check), ECC)
    assert (ecc.status, ecc.reason) == (Status.UNKNOWN, "NVMLError")
    assert "nvmlDeviceGetTotalEccErrors" in ecc.message and "lost" in ecc.message
    check = check_of(FakeNvml(lost, FakeGpu(volatile_dbe=1)))
    assert status(look(check), ECC) is Status.TRUE


def test_xids_from_the_event_set_become_events_worded_like_the_kernel_line() -> None:
    fake = FakeNvml(FakeGpu(), FakeGpu(bus_id="00000000:B3:00.0", uuid="GPU-b"))
    check = check_of(fake)
    look(check)
    fake.pending_xids = [(1, 79), (0, 13)]
    events = [(e.reason, e.message) for e in look(check).events]
    assert events == [
        ("NvidiaXid", "NVRM: Xid (PCI:0000:b3:00): 79, GPU 1 (00000000:B3:00.0, GPU-b), from NVML's event set"),
        ("NvidiaXid", "NVRM: Xid (PCI:0000:3b:00): 13, GPU 0 (00000000:3B:00.0, "
                      "GPU-11111111-2222-3333-4444-555555555555), from NVML's event set"),
    ]
    assert look(check).events == ()


def test_gpus_that_cannot_post_xids_leave_no_event_set_behind() -> None:
    fake = FakeNvml(FakeGpu(), xid_supported=False)
    check = check_of(fake)
    look(check)
    assert fake.event_sets_freed == 1
    asyncio.run(check.close())
    assert fake.event_sets_freed == 1 and not fake.initialized


def test_close_frees_the_event_set_and_shuts_nvml_down() -> None:
    fake = FakeNvml(FakeGpu())
    check = check_of(fake)
    look(check)
    asyncio.run(check.close())
    assert fake.event_sets_freed == 1 and not fake.initialized


def test_config_errors_name_the_field() -> None:
    config = dataclasses.replace(Config(), library_dirs=("lib",), slowdown_polls=0,
                                 absent_every=dt.timedelta(seconds=1))
    assert problems(config) == ["libraryDirs[0]: must be an absolute path, got 'lib'",
                                "absentEvery: must not be shorter than interval (30s), got 1s",
                                "slowdownPolls: must be at least 1, got 0"]


def problems(config: object) -> list[str]:
    return [str(problem) for problem in field_problems(config)]


# --- hostile answers: a GPU's unreadable identity or values are that GPU's Unknown, never a crash or a mix-up ----
@pytest.mark.parametrize("bad", [{"errors": {"nvmlDeviceGetPciInfo": GPU_IS_LOST}}, {"bus_id": "unknown PCI id"},
                                 {"bus_id": "3B00"}, {"bus_id": b"00000000:3B:\xff0.0"}],
                         ids=["pci-info-lost", "placeholder", "no-colon", "not-utf8"])
def test_an_xid_on_a_gpu_whose_bus_id_is_unreadable_is_told_and_the_conditions_stand(bad: dict[str, Any]) -> None:
    fake = FakeNvml(FakeGpu(bus_id="00000000:1A:00.0", uuid="GPU-a", volatile_dbe=1), FakeGpu(uuid="GPU-b", **bad))
    check = check_of(fake)
    look(check)
    fake.pending_xids = [(1, 79), (0, 13)]
    obs = look(check)  # before: ValueError out of kernel_pci: the Xids lost, all six conditions Unknown
    assert obs.error == "" and status(obs, ECC) is Status.TRUE and status(obs, REMAP_FAILED) is Status.FALSE
    unpaired, paired = (e.message for e in obs.events)
    assert unpaired.startswith("Xid 79 on GPU 1 (bus id unreadable, GPU-b), from NVML's event set; not paired with "
                               "the kernel log's line: bus id: ")
    assert xid_key(unpaired) is None  # the kernel log's own line for it is reported too, not taken for this one
    assert xid_key(paired) == ("0000:1a:00", 13)


def test_gpus_without_a_readable_uuid_never_share_links_or_counters() -> None:
    no_uuid = {"nvmlDeviceGetUUID": GPU_IS_LOST}
    fake = FakeNvml(FakeGpu(bus_id="00000000:1A:00.0", nvlinks=[1, 1], pcie_replays=100, errors=no_uuid),
                    FakeGpu(bus_id="00000000:3B:00.0", nvlinks=[0, 0], pcie_replays=5, errors=no_uuid))
    check = check_of(fake)
    for _ in range(3):  # before: GPUNVLinkDown=True for GPU 1 (GPU 0's links), "PCIe replays rose from 5 to 100"
        obs = look(check)
        assert status(obs, NVLINK_DOWN) is Status.FALSE and obs.events == ()
    fake.gpus[1].nvlinks, fake.gpus[1].pcie_replays = [1, 1], 6
    look(check)
    fake.gpus[1].nvlinks = [1, 0]
    obs = look(check)
    assert condition(obs, NVLINK_DOWN).message == ("GPU 1 (00000000:3B:00.0, UUID unreadable): NVLink 1 inactive, "
                                                   "active before")


def test_gpus_answering_the_same_uuid_are_still_two_gpus() -> None:
    fake = FakeNvml(FakeGpu(bus_id="00000000:1A:00.0", uuid="", nvlinks=[1], pcie_replays=100),
                    FakeGpu(bus_id="00000000:3B:00.0", uuid="", nvlinks=[0], pcie_replays=5),
                    FakeGpu(bus_id="00000000:5E:00.0", uuid="GPU-twin", pcie_replays=1),
                    FakeGpu(bus_id="00000000:5E:00.0", uuid="GPU-twin", pcie_replays=9))
    check = check_of(fake)
    look(check)
    obs = look(check)
    assert status(obs, NVLINK_DOWN) is Status.FALSE and obs.events == ()


def test_a_gpu_lost_before_the_listing_is_unknown_while_the_others_are_judged() -> None:
    fake = FakeNvml(FakeGpu(bus_id="00000000:1A:00.0", uuid="GPU-a", volatile_dbe=3),
                    FakeGpu(answers={"nvmlDeviceGetHandleByIndex": pynvml.NVMLError(GPU_IS_LOST)}))
    obs = look(check_of(fake))  # before: "NVML: GPU is lost", no GPU watched, one nvmlInit left per try
    assert obs.error == "" and status(obs, ECC) is Status.TRUE
    remap = condition(obs, REMAP_PENDING)
    assert (remap.status, remap.message) == (Status.UNKNOWN, "GPU 1 (bus id unreadable, UUID unreadable): no handle: "
                                                             "nvmlDeviceGetHandleByIndex: GPU is lost")


@pytest.mark.parametrize(("call", "answer", "type_"), [
    ("nvmlDeviceGetRemappedRows", (0, 0, 1), REMAP_FAILED),
    ("nvmlDeviceGetTotalEccErrors", ctypes.ArgumentError("wrong type"), ECC),
    ("nvmlDeviceGetNvLinkState", 7, NVLINK_DOWN),
    ("nvmlDeviceGetCurrentClocksEventReasons", "0x8", SLOWDOWN),
], ids=["rows-shape", "ctypes-error", "link-state", "clock-text"])
def test_an_answer_of_another_shape_is_that_gpu_s_unknown_and_another_gpu_s_problem_still_wins(
        call: str, answer: Any, type_: str) -> None:
    bad = FakeGpu(bus_id="00000000:1A:00.0", uuid="GPU-bad", nvlinks=[1], answers={call: answer})
    found = condition(look(check_of(FakeNvml(bad))), type_)  # before: a ValueError/ArgumentError out of the look
    assert (found.status, found.reason) == (Status.UNKNOWN, "NVMLError")
    assert found.message.startswith(f"GPU 0 (00000000:1A:00.0, GPU-bad): {call}: ")
    problem = FakeGpu(volatile_dbe=1, remapped_rows=(0, 1, 0, 1), nvlinks=[1], clock_events=0x8)
    check = check_of(FakeNvml(bad, problem), slowdown_polls=1)
    look(check)
    problem.nvlinks = [0]
    assert status(look(check), type_) is Status.TRUE


def test_an_xid_on_a_gpu_nvml_cannot_name_says_which_it_could_not_tell() -> None:
    fake = FakeNvml(FakeGpu())
    check = check_of(fake)
    look(check)
    fake.pending_xids = [(5, 79), (-1, 48), (0, None)]
    assert [e.message for e in look(check).events] == [
        "Xid 79 on an unidentified GPU (NVML index 5, not one of the 1 GPUs listed), from NVML's event set",
        "Xid 48 on an unidentified GPU (NVML could not tell which: nvmlDeviceGetIndex: answered -1, not a count), "
        "from NVML's event set",
        "Xid (its code unreadable: nvmlEventSetWait_v2: answered None, not a count) on GPU 0 (00000000:3B:00.0, "
        "GPU-11111111-2222-3333-4444-555555555555), from NVML's event set; not paired with the kernel log's line: "
        "its code unreadable"]


def test_a_failing_xid_event_set_is_said_once_until_it_answers_again() -> None:
    fake = FakeNvml(FakeGpu())
    check = check_of(fake)
    fake.event_wait_error = pynvml.NVMLError(GPU_IS_LOST)
    said = [(e.reason, e.message) for e in look(check).events]  # before: nothing, the Xids silently unread
    assert said == [("NVMLEventSetFailed", "NVML's Xid event set failed (nvmlEventSetWait_v2: GPU is lost): Xids "
                                           "are read from the kernel log only until it answers again")]
    assert look(check).events == ()
    fake.event_wait_error = None
    assert look(check).events == ()
    fake.event_wait_error = pynvml.NVMLError(GPU_IS_LOST)
    assert [e.reason for e in look(check).events] == ["NVMLEventSetFailed"]


@pytest.mark.parametrize("count", [-1, "2", 1.0, 10**6, pynvml.NVMLError(GPU_IS_LOST), UnicodeError("x")])
def test_a_gpu_count_that_is_no_count_is_an_error_and_nvml_is_let_go(count: Any) -> None:
    fake = FakeNvml(FakeGpu())
    fake.count = count
    if isinstance(count, BaseException):
        fake.nvmlDeviceGetCount = lambda: _raise(count)  # type: ignore[method-assign]
    obs = look(check_of(fake))
    assert obs.error.startswith("NVML: ") and obs.conditions == ()
    assert (fake.inits, fake.shutdowns) == (1, 1)  # before: an nvmlInit left behind on every try


def test_a_binding_exception_from_nvml_init_is_an_error_not_a_crash() -> None:
    fake = FakeNvml(FakeGpu())

    def nvmlInit() -> None:  # the binding's own failure, not an NVMLError
        raise OSError("cannot open shared object")
    fake.nvmlInit = nvmlInit  # type: ignore[method-assign]
    assert look(check_of(fake)).error == "NVML: nvmlInit: OSError: cannot open shared object"


def _raise(exc: BaseException) -> Any:
    raise exc
