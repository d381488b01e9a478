"""libsystemd's sd-journal reader, through ctypes: the calls the journald source needs and nothing more.

The library is the host's own `libsystemd.so.0` below the host root when it loads into this process (it reads
whatever format its own journald writes), else the image's (the dynamic loader's `libsystemd.so.0`). A host
library built against a newer C library than the image's fails to load (its symbol versions are missing; ctypes
binds every symbol at load, so nothing fails later) and the image's is used. `load()` raises OSError naming each
library tried when none loads.

Types follow sd-journal.h: the journal is an opaque `sd_journal *` (c_void_p); a field comes back as a pointer
and a size_t length to "FIELD=value" bytes that are not NUL-terminated and stay valid only until the next call on
that journal, so they are copied at once; a cursor is a malloc'd string that the caller frees with the C
library's free(). A `Journal` is not thread-safe and must not cross a fork (sd-journal checks): the agent reads
it on its event loop only.
"""

from __future__ import annotations

import ctypes
import functools
import os
from pathlib import Path

SONAME = "libsystemd.so.0"
OS_ROOT = 1 << 4  # SD_JOURNAL_OS_ROOT: the path is an OS tree; read its /var/log/journal and /run/log/journal
INVALIDATE = 2  # SD_JOURNAL_INVALIDATE from sd_journal_process(): files were added or removed (rotation)

_P = ctypes.c_void_p
_PROTOTYPES: dict[str, tuple[object, list[object]]] = {
    "sd_journal_open_directory": (ctypes.c_int, [ctypes.POINTER(_P), ctypes.c_char_p, ctypes.c_int]),
    "sd_journal_close": (None, [_P]),
    "sd_journal_get_fd": (ctypes.c_int, [_P]),
    "sd_journal_reliable_fd": (ctypes.c_int, [_P]),
    "sd_journal_process": (ctypes.c_int, [_P]),
    "sd_journal_add_match": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_size_t]),
    "sd_journal_set_data_threshold": (ctypes.c_int, [_P, ctypes.c_size_t]),
    "sd_journal_seek_head": (ctypes.c_int, [_P]),
    "sd_journal_seek_realtime_usec": (ctypes.c_int, [_P, ctypes.c_uint64]),
    "sd_journal_seek_cursor": (ctypes.c_int, [_P, ctypes.c_char_p]),
    "sd_journal_test_cursor": (ctypes.c_int, [_P, ctypes.c_char_p]),
    "sd_journal_next": (ctypes.c_int, [_P]),
    "sd_journal_get_data": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.POINTER(_P), ctypes.POINTER(ctypes.c_size_t)]),
    "sd_journal_get_realtime_usec": (ctypes.c_int, [_P, ctypes.POINTER(ctypes.c_uint64)]),
    "sd_journal_get_cursor": (ctypes.c_int, [_P, ctypes.POINTER(_P)]),  # char **: c_void_p keeps it freeable
}


class Libsystemd:
    """A loaded libsystemd with the prototypes of the calls used here."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lib = ctypes.CDLL(path)  # OSError when it does not load
        try:
            for name, (restype, argtypes) in _PROTOTYPES.items():
                function = getattr(self.lib, name)
                function.restype, function.argtypes = restype, argtypes
        except AttributeError as e:  # a libsystemd too old for one of the calls
            raise OSError(f"{path}: {e}") from None
        free = ctypes.CDLL(None).free  # the C library's, which libsystemd's malloc() came from
        free.restype, free.argtypes = None, [_P]
        self.free = free


def candidates(host_root: Path) -> tuple[str, ...]:
    """The host's libsystemd.so.0 files below `host_root`, then the image's (found by the dynamic loader)."""
    import sysconfig  # noqa: PLC0415 - only where a journal is read: the agent does not import it otherwise

    multiarch = sysconfig.get_config_var("MULTIARCH") or f"{os.uname().machine}-linux-gnu"
    found: list[str] = []
    for folder in (f"usr/lib/{multiarch}", f"lib/{multiarch}", "usr/lib64", "lib64", "usr/lib"):
        path = _below(host_root, host_root / folder / SONAME)
        if path is not None and str(path) not in found:
            found.append(str(path))
    return (*found, SONAME)


def _below(root: Path, path: Path) -> Path | None:
    """`path` with its own symlinks followed inside `root` (an absolute link target is the host's, not ours)."""
    for _ in range(8):
        if not path.is_symlink():
            return path if path.is_file() else None
        target = os.readlink(path)
        path = root / target.lstrip("/") if target.startswith("/") else path.parent / target
    return None


@functools.cache
def load(paths: tuple[str, ...]) -> Libsystemd:
    """The first of `paths` that loads (dlopen is process-wide: one load each, shared by every journal)."""
    errors = []
    for path in paths:
        try:
            return Libsystemd(path)
        except OSError as e:
            errors.append(str(e))
    raise OSError(f"cannot load {SONAME} to read the journal: {'; '.join(errors) or 'no library to try'}")


def _check(result: int, what: str) -> int:
    if result < 0:
        raise OSError(-result, f"{what}: {os.strerror(-result)}")
    return result


class Journal:
    """One open `sd_journal`. Every call raises OSError on a negative (errno) result."""

    def __init__(self, library: Libsystemd, path: Path, *, os_root: bool) -> None:
        self.library = library
        self._lib = library.lib
        handle = _P()
        _check(self._lib.sd_journal_open_directory(ctypes.byref(handle), os.fsencode(path), OS_ROOT if os_root else 0),
               f"cannot open the journal in {path}")
        self._handle: _P | None = handle

    @property
    def handle(self) -> _P:
        if self._handle is None:
            raise OSError("the journal is closed")
        return self._handle

    def fd(self) -> int:
        """sd-journal's inotify descriptor: readable when a journal file changed (then call `process()`)."""
        return _check(self._lib.sd_journal_get_fd(self.handle), "sd_journal_get_fd")

    def reliable_fd(self) -> bool:
        """False where `fd()` may miss changes (journal files on a network file system): poll instead."""
        return _check(self._lib.sd_journal_reliable_fd(self.handle), "sd_journal_reliable_fd") > 0

    def process(self) -> int:
        """Consume the descriptor's events; NOP, APPEND or INVALIDATE (files added or removed: sd-journal has
        already taken them in, and the next `next()` goes on from the current position)."""
        return _check(self._lib.sd_journal_process(self.handle), "sd_journal_process")

    def add_match(self, field: str, value: str) -> None:
        """Entries with FIELD=value; matches on one field are ORed."""
        data = f"{field}={value}".encode()
        _check(self._lib.sd_journal_add_match(self.handle, data, len(data)), f"sd_journal_add_match({field})")

    def set_data_threshold(self, size: int) -> None:
        _check(self._lib.sd_journal_set_data_threshold(self.handle, size), "sd_journal_set_data_threshold")

    def seek_head(self) -> None:
        _check(self._lib.sd_journal_seek_head(self.handle), "sd_journal_seek_head")

    def seek_realtime(self, usec: int) -> None:
        _check(self._lib.sd_journal_seek_realtime_usec(self.handle, usec), "sd_journal_seek_realtime_usec")

    def seek_cursor(self, cursor: str) -> None:
        _check(self._lib.sd_journal_seek_cursor(self.handle, cursor.encode()), "sd_journal_seek_cursor")

    def test_cursor(self, cursor: str) -> bool:
        """Whether the current entry is the one `cursor` names."""
        return _check(self._lib.sd_journal_test_cursor(self.handle, cursor.encode()), "sd_journal_test_cursor") > 0

    def next(self) -> bool:
        """Move to the next entry; False at the end (for now)."""
        return _check(self._lib.sd_journal_next(self.handle), "sd_journal_next") > 0

    def get(self, field: bytes, limit: int) -> bytes | None:
        """The current entry's `field` value, at most `limit` bytes of it; None when the entry lacks it or it cannot
        be read (ENOENT; EBADMSG for a corrupt object, EPROTONOSUPPORT for a compression this library lacks: the
        entry is skipped, as journalctl skips it, rather than stop the reading at it again after each restart)."""
        data, length = _P(), ctypes.c_size_t()
        if self._lib.sd_journal_get_data(self.handle, field, ctypes.byref(data), ctypes.byref(length)) < 0:
            return None
        prefix = len(field) + 1  # "FIELD="
        if data.value is None or length.value < prefix:
            return None
        return ctypes.string_at(data.value + prefix, min(length.value - prefix, limit))

    def realtime_usec(self) -> int:
        usec = ctypes.c_uint64()
        _check(self._lib.sd_journal_get_realtime_usec(self.handle, ctypes.byref(usec)), "sd_journal_get_realtime_usec")
        return usec.value

    def cursor(self) -> str:
        text = _P()
        _check(self._lib.sd_journal_get_cursor(self.handle, ctypes.byref(text)), "sd_journal_get_cursor")
        try:
            return ctypes.string_at(text.value).decode() if text.value else ""
        finally:
            self.library.free(text)

    def close(self) -> None:
        handle, self._handle = self._handle, None
        if handle is not None:
            self._lib.sd_journal_close(handle)
