"""Read-only remounts and ext4 error counters, read from a fixture host root."""

from __future__ import annotations

import asyncio
import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent.bounds import field_problems
from agent.checks.filesystem import CORRUPTION, READONLY, Config, FilesystemCheck, parse_mounts
from agent.host import HostRoot
from agent.model import ConditionReport, Observation, Status

NOW = dt.datetime(2024, 5, 1, 12, 0, 0, tzinfo=dt.UTC)


@dataclass(frozen=True)
class DeniedHost(HostRoot):
    """A host root where some files raise PermissionError (tests run as root, so chmod would not)."""

    denied: frozenset[str] = frozenset()

    def read_text(self, host_path: str) -> str:
        if host_path in self.denied:
            raise PermissionError(13, "Permission denied", host_path)
        return super().read_text(host_path)


def write(root: Path, host_path: str, text: str | bytes) -> None:
    path = root / host_path.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)


def mounts(**modes: str) -> str:
    """mounts(root="rw", kubelet="ro") -> a /proc/mounts text; names map to the default mount points."""
    points = {"root": "/", "kubelet": "/var/lib/kubelet", "containerd": "/var/lib/containerd"}
    lines = ["proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0", "sysfs /sys sysfs rw,relatime 0 0"]
    lines += [f"/dev/sda{i} {points[name]} ext4 {mode},relatime 0 0" for i, (name, mode) in enumerate(modes.items())]
    return "\n".join(lines) + "\n"


def observe(check: FilesystemCheck, now: dt.datetime = NOW) -> Observation:
    return asyncio.run(check.observe(now))


def condition(observation: Observation, condition_type: str) -> ConditionReport:
    return next(c for c in observation.conditions if c.type == condition_type)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    write(tmp_path, "/proc/mounts", mounts(root="rw", kubelet="rw"))
    (tmp_path / "sys/fs").mkdir(parents=True)
    return tmp_path


def test_the_mount_table_parser_unescapes_octal_and_lets_the_last_mount_on_a_point_win() -> None:
    table = parse_mounts("/dev/sdb1 /mnt/my\\040disk xfs rw 0 0\n"
                         "/dev/sdc1 /data ext4 rw,relatime 0 0\n"
                         "/dev/sdc2 /data ext4 ro,relatime 0 0\n"
                         "/dev/sdd1 /back\\134slash ext4 rw 0 0\n")
    assert table["/mnt/my disk"].device == "/dev/sdb1"
    assert not table["/mnt/my disk"].read_only
    assert table["/data"].device == "/dev/sdc2"
    assert table["/data"].read_only
    assert "/back\\slash" in table


def test_a_writable_mount_that_turns_read_only_is_flagged_and_recovers_when_remounted_rw(root: Path) -> None:
    check = FilesystemCheck(Config(), HostRoot(root))
    first = observe(check)
    assert (first.check, [c.type for c in first.conditions]) == ("filesystem", list(check.condition_types))
    assert condition(first, READONLY).status is Status.FALSE

    write(root, "/proc/mounts", mounts(root="ro", kubelet="rw"))
    report = condition(observe(check), READONLY)
    assert (report.status, report.reason) == (Status.TRUE, "FilesystemIsReadOnly")
    assert report.message == "/ (/dev/sda0, ext4) was rw and is now read-only"

    write(root, "/proc/mounts", mounts(root="rw", kubelet="rw"))
    assert condition(observe(check), READONLY).status is Status.FALSE


@pytest.mark.parametrize(("modes", "status"), [
    ({"root": "ro", "kubelet": "rw"}, Status.FALSE),
    ({"root": "rw", "kubelet": "ro"}, Status.TRUE),
    ({"root": "rw", "containerd": "ro"}, Status.FALSE),
], ids=["read-only-root-is-normal", "kubelet-dir-must-be-writable", "containerd-not-in-expect-rw"])
def test_a_mount_read_only_from_the_start_is_a_problem_only_when_listed_in_expect_rw(
        root: Path, modes: dict[str, str], status: Status) -> None:
    write(root, "/proc/mounts", mounts(**modes))
    assert condition(observe(FilesystemCheck(Config(), HostRoot(root))), READONLY).status is status


def test_configured_mount_points_that_are_not_mounted_are_ignored(root: Path) -> None:
    write(root, "/proc/mounts", mounts(root="rw"))
    config = Config(mounts=("/var/lib/docker",), expect_rw=())
    report = condition(observe(FilesystemCheck(config, HostRoot(root))), READONLY)
    assert (report.status, report.message) == (Status.FALSE, "no watched mount is mounted")


def test_a_mount_point_with_a_space_is_matched_after_unescaping(root: Path) -> None:
    check = FilesystemCheck(Config(mounts=("/mnt/my disk",), expect_rw=()), HostRoot(root))
    write(root, "/proc/mounts", "/dev/sdb1 /mnt/my\\040disk ext4 rw 0 0\n")
    observe(check)
    write(root, "/proc/mounts", "/dev/sdb1 /mnt/my\\040disk ext4 ro 0 0\n")
    report = condition(observe(check), READONLY)
    assert report.status is Status.TRUE
    assert report.message.startswith("/mnt/my disk (/dev/sdb1, ext4)")


def test_the_mount_table_of_init_is_preferred_over_the_agents_own(root: Path) -> None:
    # in a pod, /proc/mounts is the agent's mount namespace; /proc/1/mounts is the host's
    write(root, "/proc/1/mounts", mounts(root="rw", kubelet="ro"))
    assert condition(observe(FilesystemCheck(Config(), HostRoot(root))), READONLY).status is Status.TRUE


@pytest.mark.parametrize(("content", "denied", "fragment"), [
    (None, False, "No such file"),
    (b"\xff\xfe\x00garbage", False, "decode"),
    ("/dev/sda1 /\n", False, "line 1 is malformed"),
    ("", False, "empty"),
    (mounts(root="rw"), True, "Permission denied"),
], ids=["missing", "binary-garbage", "malformed-line", "empty", "permission-denied"])
def test_an_unreadable_mount_table_makes_read_only_unknown_not_an_exception(
        root: Path, content: str | bytes | None, denied: bool, fragment: str) -> None:
    (root / "proc/mounts").unlink()
    if content is not None:
        write(root, "/proc/mounts", content)
    host = DeniedHost(root, denied=frozenset({"/proc/mounts"} if denied else ()))
    report = condition(observe(FilesystemCheck(Config(), host)), READONLY)
    assert (report.status, report.reason) == (Status.UNKNOWN, "MountTableUnreadable")
    assert fragment in report.message


def ext4(root: Path, device: str, count: str, first: str | None = None, last: str | None = None) -> None:
    write(root, f"/sys/fs/ext4/{device}/errors_count", count)
    for name, value in (("first_error_time", first), ("last_error_time", last)):
        if value is not None:
            write(root, f"/sys/fs/ext4/{device}/{name}", value)


def test_ext4_errors_set_corruption_with_times_raise_an_event_when_rising_and_clear_after_fsck(root: Path) -> None:
    write(root, "/sys/fs/ext4/features/metadata_csum_seed", "supported\n")  # not a device
    ext4(root, "sda1", "0\n", "0\n", "0\n")
    check = FilesystemCheck(Config(), HostRoot(root))
    report = condition(observe(check), CORRUPTION)
    assert (report.status, report.message) == (Status.FALSE, "no errors recorded (ext4 sda1)")

    ext4(root, "sda1", "2\n", "1714564800\n", "1714568400\n")
    first = observe(check)
    report = condition(first, CORRUPTION)
    assert (report.status, report.reason) == (Status.TRUE, "FilesystemErrorsRecorded")
    assert report.message == ("ext4 sda1: 2 error(s) recorded "
                              "(first 2024-05-01T12:00:00+00:00, last 2024-05-01T13:00:00+00:00)")
    assert [e.reason for e in first.events] == ["Ext4ErrorCountIncreased"]

    unchanged = observe(check)
    assert condition(unchanged, CORRUPTION).status is Status.TRUE
    assert unchanged.events == ()

    ext4(root, "sda1", "0\n", "0\n", "0\n")  # e2fsck cleared the superblock counters
    assert condition(observe(check), CORRUPTION).status is Status.FALSE


def test_errors_already_recorded_at_first_sight_set_the_condition_without_an_event(root: Path) -> None:
    ext4(root, "nvme0n1p1", "5")
    observation = observe(FilesystemCheck(Config(), HostRoot(root)))
    report = condition(observation, CORRUPTION)
    assert (report.status, report.message) == (Status.TRUE, "ext4 nvme0n1p1: 5 error(s) recorded")
    assert observation.events == ()


@pytest.mark.parametrize(("count", "denied", "fragment"), [
    (None, False, "No such file"),
    ("lots\n", False, "invalid literal"),
    (b"\xff\xff", False, "decode"),
    ("0\n", True, "Permission denied"),
], ids=["missing", "not-a-number", "binary-garbage", "permission-denied"])
def test_an_unreadable_error_counter_makes_corruption_unknown(
        root: Path, count: str | bytes | None, denied: bool, fragment: str) -> None:
    (root / "sys/fs/ext4/sda1").mkdir(parents=True)
    if count is not None:
        write(root, "/sys/fs/ext4/sda1/errors_count", count)
    host = DeniedHost(root, denied=frozenset({"/sys/fs/ext4/sda1/errors_count"} if denied else ()))
    report = condition(observe(FilesystemCheck(Config(), host)), CORRUPTION)
    assert (report.status, report.reason) == (Status.UNKNOWN, "FilesystemErrorsUnknown")
    assert fragment in report.message


def test_a_known_error_wins_over_an_unreadable_neighbour(root: Path) -> None:
    ext4(root, "sda1", "1")
    ext4(root, "sdb1", "garbage")
    report = condition(observe(FilesystemCheck(Config(), HostRoot(root))), CORRUPTION)
    assert report.status is Status.TRUE
    assert "sdb1: cannot read errors_count" in report.message


@pytest.mark.parametrize(("layout", "status"), [
    ("no-sys", Status.UNKNOWN),
    ("no-ext4", Status.FALSE),
], ids=["sysfs-missing-is-unknown", "ext4-not-loaded-is-fine"])
def test_missing_sysfs_is_unknown_but_a_host_without_ext4_is_fine(tmp_path: Path, layout: str, status: Status) -> None:
    write(tmp_path, "/proc/mounts", mounts(root="rw"))
    if layout == "no-ext4":
        (tmp_path / "sys/fs/xfs").mkdir(parents=True)
    assert condition(observe(FilesystemCheck(Config(), HostRoot(tmp_path))), CORRUPTION).status is status


NOT_NORMAL = "must be an absolute path without a trailing slash, . or .., got "


@pytest.mark.parametrize(("config", "errors"), [
    (Config(), []),
    (Config(mounts=("/", "var/lib/kubelet"), expect_rw=()), [f"mounts[1]: {NOT_NORMAL}'var/lib/kubelet'"]),
    (Config(mounts=("/", "/data/"), expect_rw=()), [f"mounts[1]: {NOT_NORMAL}'/data/'"]),
    (Config(mounts=("/", "/"), expect_rw=()), ["mounts[1]: '/' is listed twice, as mounts[0] too"]),
    (Config(expect_rw=("/srv",)), ["expectRw[0]: '/srv' is not one of mounts"]),
    (Config(mounts_files=()), ['mountsFiles: must not be empty']),
    (Config(mounts_files=("proc/mounts",)), [f"mountsFiles[0]: {NOT_NORMAL}'proc/mounts'"]),
], ids=["defaults", "relative-mount", "trailing-slash", "duplicate-mount", "expect-rw-not-watched",
        "no-mounts-file", "relative-mounts-file"])
def test_validate_reports_each_bad_field(config: Config, errors: list[str]) -> None:
    assert problems(config) == errors


def kernel_log(root: Path, *lines: str) -> None:
    write(root, "/dev/kmsg", "".join(f"3,{i},{1000 + i},-;{line}\n" for i, line in enumerate(lines)))


@pytest.mark.parametrize(("device", "line", "status"), [
    ("/dev/sda0", "EXT4-fs (sda0): Remounting filesystem read-only", Status.TRUE),
    ("/dev/root", "EXT4-fs (vda1): Remounting filesystem read-only", Status.TRUE),
    ("/dev/sda0", "Remounting filesystem read-only", Status.TRUE),
    ("/dev/sda0", "BTRFS info (device sda0): forced readonly", Status.TRUE),
    ("/dev/sda0", "EXT4-fs (sdz9): Remounting filesystem read-only", Status.FALSE),
    ("/dev/sda0", "EXT4-fs (sda0): mounted filesystem with ordered data mode", Status.FALSE),
], ids=["ext4-same-device", "dev-root", "ext3-no-device", "btrfs", "another-device", "no-remount"])
def test_a_mount_read_only_at_first_sight_is_flagged_when_the_kernel_logged_its_remount(
        root: Path, device: str, line: str, status: Status) -> None:
    # The agent (re)started after the remount: it never saw / writable, only the kernel log says what happened.
    write(root, "/proc/mounts", f"{device} / ext4 ro,relatime 0 0\n/dev/sda1 /var/lib/kubelet ext4 rw 0 0\n")
    kernel_log(root, "EXT4-fs error (device sda0): ext4_journal_check_start:83: Detected aborted journal", line)
    report = condition(observe(FilesystemCheck(Config(), HostRoot(root))), READONLY)
    assert report.status is status, report
    if status is Status.TRUE:
        assert report.message == f"/ ({device}, ext4) is read-only; the kernel logged: {line}"


def test_a_remount_logged_while_running_is_seen_and_a_later_rw_remount_clears_it(root: Path) -> None:
    check = FilesystemCheck(Config(), HostRoot(root))
    write(root, "/proc/mounts", "/dev/sda0 / ext4 ro 0 0\n")
    kernel_log(root)
    assert condition(observe(check), READONLY).status is Status.FALSE  # an immutable root: normal
    kernel_log(root, "EXT4-fs (sda0): Remounting filesystem read-only")
    assert condition(observe(check), READONLY).status is Status.TRUE
    write(root, "/proc/mounts", "/dev/sda0 / ext4 rw 0 0\n")
    assert condition(observe(check), READONLY).status is Status.FALSE


def test_without_a_readable_kernel_log_the_mount_table_alone_decides(root: Path) -> None:
    write(root, "/proc/mounts", "/dev/sda0 / ext4 ro 0 0\n")  # no /dev/kmsg at all
    assert condition(observe(FilesystemCheck(Config(), HostRoot(root))), READONLY).status is Status.FALSE
    kernel_log(root, "EXT4-fs (sda0): Remounting filesystem read-only")
    off = FilesystemCheck(Config(kernel_log=""), HostRoot(root))
    assert condition(observe(off), READONLY).status is Status.FALSE
    assert problems(Config(kernel_log="dev/kmsg")) == ['kernelLog: must be an absolute path, or "" not to read '
                                                       "the kernel log, got 'dev/kmsg'"]


def test_a_kernel_line_full_of_parentheses_is_read_in_one_pass(root: Path) -> None:
    # Issue 25: on Python's re every "(" of a line made the remount pattern scan the rest of it: quadratic in the
    # line's length, on every kernel record. On RE2 the line below is one linear pass, with the same answers.
    write(root, "/proc/mounts", "/dev/sda0 / ext4 ro 0 0\n")
    noise = "(x) " * 4000
    kernel_log(root, noise, noise + "(sda0) EXT4-fs: Remounting filesystem read-only")
    report = condition(observe(FilesystemCheck(Config(), HostRoot(root))), READONLY)
    assert report.status is Status.FALSE, "the first parenthesised word names the device: x, not sda0"
    kernel_log(root, "EXT4-fs (sda0): " + noise + "Remounting filesystem read-only")
    assert condition(observe(FilesystemCheck(Config(), HostRoot(root))), READONLY).status is Status.TRUE


def problems(config: object) -> list[str]:
    return [str(problem) for problem in field_problems(config)]
