"""A daemon's configuration files and directories, read under the host root within bounds on bytes and on work.

Bounds on bytes skip what is beyond them and say so in a note; reading goes on:
each file is read up to MAX_FILE_BYTES (never half a line), at most MAX_FILES files are read, a directory yields at
most MAX_DIR_ENTRIES entries, a path of PATH_MAX bytes or more is not looked up (as the OS would refuse it).

Bounds on work stop the whole read with `OverBudget`, naming the file and line that asked for too much, because
the files cannot be read to the end within them: includes and directories followed (MAX_FOLLOWED; one `confdir`
line may name thousands), path components and symlinks looked at (MAX_LOOKUP_STEPS), directory entries listed
(MAX_ENTRIES_LISTED). Each path is looked up once and each directory listed once per read, however often named.
Together they keep one read to a few thousand system calls, whatever the files say, so a reader run in an
executor thread, which a timeout cannot stop, always ends soon.

Symlinks are followed as the host would (an absolute link stays under the host root), at most MAX_SYMLINKS hops.
A missing file is silent; one that cannot be read, is not a regular file (a FIFO would block) or is not text (a NUL
byte) is skipped with a note.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import posixpath
import re
import stat
from collections import deque
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from agent.host import HostRoot

MAX_FILE_BYTES = 64 * 1024  # a distribution's chrony.conf is ~2 KiB
MAX_FILES = 32
MAX_DIR_ENTRIES = 1000
PATH_MAX = 4096  # Linux's
MAX_SYMLINKS = 40  # Linux's MAXSYMLINKS
MAX_FOLLOWED = 64  # a Debian chrony follows 3 (a confdir, two sourcedirs)
MAX_LOOKUP_STEPS = 2048  # one lstat each; a file five directories deep costs 5, and MAX_FILES of them 160
MAX_ENTRIES_LISTED = 4 * MAX_DIR_ENTRIES

_WILDCARDS = re.compile(r"[*?\[]")


class OverBudget(Exception):
    """A bound on work was reached: the read stops. The message names where (file:line) and the bound."""


class ConfigFiles:
    """Reads files and lists directories within the bounds, keeping what was read and what went wrong."""

    def __init__(self, host: HostRoot) -> None:
        self._host = host
        self._tried: set[str] = set()  # host paths of files already asked for: read, missing or skipped
        self._seen: set[Path] = set()  # real paths of the files read (two links to one file: read once)
        self._listed: dict[str, list[str]] = {}  # host or real path of a directory -> its names
        self._full = False  # MAX_FILES reached (noted once)
        self._followed = self._steps = self._entries = 0
        self.where = ""  # the file:line being followed, named when a bound on work is reached
        self.read: list[str] = []
        self.notes: list[str] = []

    def follow(self, where: str, count: int = 1) -> None:
        """Counts `count` includes or directories named at `where` against MAX_FOLLOWED."""
        self.where = where
        self._followed += count
        if self._followed > MAX_FOLLOWED:
            raise OverBudget(f"{where}: more than {MAX_FOLLOWED} includes and directories to follow in one read")

    def lines(self, host_path: str) -> list[str] | None:
        """The file's lines; None when it is missing, unusable, already asked for or over the file limit."""
        if host_path in self._tried:
            return None
        self._tried.add(host_path)
        if len(self.read) == MAX_FILES:
            if not self._full:
                self._full = True
                self.notes.append(f"{host_path} and later files not read: {MAX_FILES} files read already")
            return None
        try:
            real = self._resolve(host_path)
            if real in self._seen:
                return None
            self._seen.add(real)
            data = _read_regular_file(real)
        except FileNotFoundError:
            return None
        except OSError as e:
            self.notes.append(f"{host_path}: {e.strerror or e}")
            return None
        self.read.append(host_path)
        if b"\0" in data:
            self.notes.append(f"{host_path}: not a text file")
            return []
        if len(data) > MAX_FILE_BYTES:
            self.notes.append(f"{host_path}: read only the first {MAX_FILE_BYTES // 1024} KiB")
            data = data[:data.rfind(b"\n", 0, MAX_FILE_BYTES) + 1]  # never half a line
        return data.decode(errors="replace").splitlines()  # a bad byte spoils its word, not the file

    def first(self, host_paths: tuple[str, ...]) -> tuple[str, list[str]] | None:
        """The first of a daemon's main files that can be read, and its lines."""
        for host_path in host_paths:
            if (lines := self.lines(host_path)) is not None:
                return host_path, lines
        return None

    def names(self, host_dir: str) -> list[str]:
        """The visible entry names of a directory, sorted; [] when it is missing or unreadable."""
        if (known := self._listed.get(host_dir)) is not None:
            return known
        names: list[str] = []
        try:
            real = self._resolve(host_dir)
            if (known := self._listed.get(str(real))) is not None:
                names = known
            else:
                names = self._scan(host_dir, real)
                self._listed[str(real)] = names
        except FileNotFoundError:
            pass
        except OSError as e:
            self.notes.append(f"{host_dir}: {e.strerror or e}")
        self._listed[host_dir] = names
        return names

    def _scan(self, host_dir: str, real: Path) -> list[str]:
        names: list[str] = []
        with os.scandir(real) as entries:
            for count, entry in enumerate(entries):
                if count == MAX_DIR_ENTRIES:
                    self.notes.append(f"{host_dir}: only the first {MAX_DIR_ENTRIES} entries read")
                    break
                self._entries += 1
                if self._entries > MAX_ENTRIES_LISTED:
                    raise OverBudget(f"{self.where or host_dir}: more than {MAX_ENTRIES_LISTED} directory entries "
                                     "to list in one read")
                if not entry.name.startswith("."):  # hidden: neither glob(3) nor systemd reads them
                    names.append(entry.name)
        return sorted(names)

    def in_dirs(self, host_dirs: Sequence[str], suffix: str) -> list[str]:
        """`*<suffix>` of every directory, sorted by file name; a name found in an earlier directory wins."""
        chosen: dict[str, str] = {}
        for host_dir in host_dirs:
            for name in self.names(host_dir):
                if name.endswith(suffix):
                    chosen.setdefault(name, posixpath.join(host_dir, name))
        return [chosen[name] for name in sorted(chosen)]

    def glob(self, pattern: str) -> list[str]:
        """chrony's `include` pattern; wildcards are understood in the file name only (as every distribution uses)."""
        directory, name = posixpath.split(pattern)
        if _WILDCARDS.search(directory):
            self.notes.append(f"{pattern}: wildcards in a directory name are not followed")
            return []
        if not _WILDCARDS.search(name):
            return [pattern]
        return [posixpath.join(directory, n) for n in self.names(directory) if fnmatch.fnmatchcase(n, name)]

    def _resolve(self, host_path: str) -> Path:
        """The host path's real path under the root, following symlinks as the host would. It walks the path
        itself, rather than through HostRoot.resolve, to count each component and link against MAX_LOOKUP_STEPS."""
        if len(host_path.encode()) >= PATH_MAX:
            raise OSError(errno.ENAMETOOLONG, os.strerror(errno.ENAMETOOLONG))
        if self._host.root == Path("/"):  # the OS follows the links, within its own bounds
            self._step(host_path)
            return Path(host_path)
        current = PurePosixPath("/")
        parts = deque(PurePosixPath(host_path).parts[1:])
        hops = 0
        while parts:
            part = parts.popleft()
            if part == "..":
                current = current.parent
                continue
            self._step(host_path)
            candidate = current / part
            real = self._host.path(str(candidate))
            if not stat.S_ISLNK(os.lstat(real).st_mode):  # a missing component ends the walk (FileNotFoundError)
                current = candidate
                continue
            hops += 1
            if hops > MAX_SYMLINKS:
                raise OSError(errno.ELOOP, os.strerror(errno.ELOOP))
            target = PurePosixPath(os.readlink(real))
            parts.extendleft(reversed(target.parts[1:] if target.is_absolute() else target.parts))
            current = PurePosixPath("/") if target.is_absolute() else current
        return self._host.path(str(current))

    def _step(self, host_path: str) -> None:
        self._steps += 1
        if self._steps > MAX_LOOKUP_STEPS:
            raise OverBudget(f"{self.where or host_path}: more than {MAX_LOOKUP_STEPS} path lookup steps "
                             "(components and symlinks) in one read")


def _read_regular_file(path: os.PathLike[str] | str) -> bytes:
    """Up to MAX_FILE_BYTES + 1 bytes. O_NONBLOCK: opening a FIFO must not wait for a writer."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError("not a regular file")
        return f.read(MAX_FILE_BYTES + 1)
