"""The NTP servers the node's own time daemon is configured with, read from its files under the host root.

The NTP check measures the clock against these when the operator names no servers: they are the servers the node
already uses, so its egress rules let them through. Three daemons are looked for, in this order, and the first
whose files name at least one server wins:

1. chrony: `/etc/chrony/chrony.conf` (Debian, Ubuntu), else `/etc/chrony.conf` (RHEL, Amazon Linux), with its
   `include GLOB`, `confdir DIR...` (`*.conf`) and `sourcedir DIR...` (`*.sources`: server and pool lines only);
   in a confdir or sourcedir list a file name found in an earlier directory hides the same name in a later one,
   and the files are read sorted by name, as chronyd reads them.
2. ntpd and ntpsec: `/etc/ntpsec/ntp.conf`, else `/etc/ntp.conf` (on Debian 12 the first is ntpsec's and the second
   may be left over from the `ntp` package it replaced), with `includefile PATH`.
3. systemd-timesyncd: the first of `timesyncd.conf` in /etc/systemd, /run/systemd, /usr/local/lib/systemd and
   /usr/lib/systemd, then the `timesyncd.conf.d/*.conf` drop-ins of those directories sorted by file name (a name in
   an earlier directory hides it in a later one), as systemd reads them. In `[Time]` each `NTP=` adds its
   space-separated servers and an empty `NTP=` clears the list (systemd's `config_parse_servers`: assignments
   add, they do not replace); `FallbackNTP=` works the same and counts only when no NTP= server is left. Servers
   timesyncd learns from systemd-networkd (DHCP) and its compiled-in fallbacks are in no file and are not found.

Why this order: a node runs one daemon, but a removed package's configuration stays until it is purged, so the
order only decides between such leftovers. chrony first, the default of RHEL, Amazon Linux and most cloud images;
timesyncd last, because its shipped file names no server (its list is compiled in) and is present on nearly every
systemd host, whatever daemon runs. Asking which daemon is running would mean scanning every host process each
interval; a wrong pick costs little, since the check only notes servers of the daemon that do not answer.

What is not a server to measure against: `peer` lines (a symmetric partner, often a sibling client of the same
upstreams, not a reference the node follows), `refclock` lines (devices), sources marked `noselect` (monitored,
never followed), and loopback addresses, which would measure the node against itself: a local daemon, and ntpd's
reference-clock pseudo-addresses 127.127.t.u. A chrony `port N` option is kept ("host:N", "[v6]:N").

Bounds, so a strange host costs little and never raises: each file is read up to 64 KiB (the rest is ignored, with
a note), at most 32 files in all, includes nest at most 5 deep (ntpd's own limit) and a file already read is not
read again (include loops), a directory yields at most 1000 entries. Symlinks are followed as the host would (an
absolute link stays under the host root), at most 40 hops. A missing file is silent; one that cannot be read, is
not a regular file (a FIFO would block) or is not text (a NUL byte) is skipped with a note. Relative paths in a
file are taken from that file's directory.
"""

from __future__ import annotations

import errno
import fnmatch
import ipaddress
import os
import posixpath
import re
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent.host import HostRoot
from nodemedic_common.inputs import quoted

MAX_FILE_BYTES = 64 * 1024  # a distribution's chrony.conf is ~2 KiB
MAX_FILES = 32
MAX_INCLUDE_DEPTH = 5  # ntpd's MAXINCLUDELEVEL
MAX_DIR_ENTRIES = 1000

CHRONY_CONFS = ("/etc/chrony/chrony.conf", "/etc/chrony.conf")
NTPD_CONFS = ("/etc/ntpsec/ntp.conf", "/etc/ntp.conf")
_SYSTEMD_DIRS = ("/etc/systemd", "/run/systemd", "/usr/local/lib/systemd", "/usr/lib/systemd")
TIMESYNCD_CONFS = tuple(f"{d}/timesyncd.conf" for d in _SYSTEMD_DIRS)
TIMESYNCD_DROPIN_DIRS = tuple(f"{d}/timesyncd.conf.d" for d in _SYSTEMD_DIRS)
LOOKED_FOR = (f"{', '.join(CHRONY_CONFS + NTPD_CONFS)}, "
              "/etc/systemd/timesyncd.conf and its drop-ins")

_HOSTNAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,252}")
_WILDCARDS = re.compile(r"[*?\[]")

Found = list[tuple[str, str]]  # (server, the host path of the file that named it), in file order


@dataclass(frozen=True)
class DaemonServers:
    daemon: str = ""  # "chrony", "ntpd" or "systemd-timesyncd"; "" when no daemon's files name a server
    servers: tuple[str, ...] = ()  # "host" or "host:port" / "[v6]:port", as ntp.split_server reads them
    files: tuple[str, ...] = ()  # host paths of the files that named `servers`
    read: tuple[str, ...] = ()  # host paths of every file read
    notes: tuple[str, ...] = ()  # "path: why" for each file skipped or cut short


def find_daemon_servers(host: HostRoot) -> DaemonServers:
    """The servers of the first daemon (chrony, ntpd, systemd-timesyncd) whose files name one, deduplicated."""
    files = _Files(host)
    for daemon, find in _DAEMONS:
        if found := find(files):
            return DaemonServers(daemon, tuple(dict.fromkeys(s for s, _ in found)),
                                 tuple(dict.fromkeys(f for _, f in found)), tuple(files.read), tuple(files.notes))
    return DaemonServers(read=tuple(files.read), notes=tuple(files.notes))


class _Files:
    """Reads a daemon's files under the host root within the bounds, keeping what was read and what went wrong."""

    def __init__(self, host: HostRoot) -> None:
        self._host = host
        self._seen: set[str] = set()
        self._full = False  # MAX_FILES reached (noted once)
        self.read: list[str] = []
        self.notes: list[str] = []

    def lines(self, host_path: str) -> list[str] | None:
        """The file's lines; None when it is missing, unusable, already read or over the file limit."""
        try:
            real = self._resolve(host_path)
            if str(real) in self._seen:
                return None
            self._seen.add(str(real))
            if len(self.read) == MAX_FILES:
                if not self._full:
                    self._full = True
                    self.notes.append(f"{host_path} and later files not read: {MAX_FILES} files read already")
                return None
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

    def _resolve(self, host_path: str) -> Path:
        real = self._host.resolve(host_path)
        if self._host.root != Path("/") and real.is_symlink():  # a link loop made it give up: the OS would follow
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP))  # the link outside the host root
        return real

    def first(self, host_paths: tuple[str, ...]) -> tuple[str, list[str]] | None:
        """The first of a daemon's main files that can be read, and its lines."""
        for host_path in host_paths:
            if (lines := self.lines(host_path)) is not None:
                return host_path, lines
        return None

    def names(self, host_dir: str) -> list[str]:
        """The visible entry names of a directory, sorted; [] when it is missing or unreadable."""
        try:
            with os.scandir(self._resolve(host_dir)) as entries:
                names: list[str] = []
                for count, entry in enumerate(entries):
                    if count == MAX_DIR_ENTRIES:
                        self.notes.append(f"{host_dir}: only the first {MAX_DIR_ENTRIES} entries read")
                        break
                    if not entry.name.startswith("."):  # hidden: neither glob(3) nor systemd reads them
                        names.append(entry.name)
        except FileNotFoundError:
            return []
        except OSError as e:
            self.notes.append(f"{host_dir}: {e.strerror or e}")
            return []
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

    def add_server(self, found: Found, path: str, host: str, port: str | None = None) -> None:
        """`host` appended to `found` unless it is a loopback address; a word that names no host is noted."""
        try:
            name = server_name(host, port)
        except ValueError as e:
            self.notes.append(f"{path}: {e}")
            return
        if name is not None:
            found.append((name, path))


def _read_regular_file(path: os.PathLike[str] | str) -> bytes:
    """Up to MAX_FILE_BYTES + 1 bytes. O_NONBLOCK: opening a FIFO must not wait for a writer."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError("not a regular file")
        return f.read(MAX_FILE_BYTES + 1)


def server_name(host: str, port: str | None = None) -> str | None:
    """`host` (and `port`) in the check's server syntax; None for a loopback address. ValueError for garbage."""
    if ":" in host or "%" in host:
        try:
            loopback = ipaddress.IPv6Address(host).is_loopback
        except ValueError:
            raise ValueError(f"{quoted(host)} is no host name or address") from None
    elif _HOSTNAME.fullmatch(host):
        loopback = host.lower() in ("localhost", "localhost.localdomain") or _is_loopback_v4(host)
    else:
        raise ValueError(f"{quoted(host)} is no host name or address")
    if port is not None and (not port.isdecimal() or not 0 < int(port) < 65536):
        raise ValueError(f"{quoted(host)} has an invalid port {quoted(port)}")
    if loopback:
        return None
    if port is None:
        return host
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _is_loopback_v4(host: str) -> bool:
    try:
        return ipaddress.IPv4Address(host).is_loopback  # 127/8, which holds ntpd's refclocks 127.127.t.u
    except ValueError:
        return False  # a host name


def _relative_to(including: str, path: str) -> str:
    return posixpath.join(posixpath.dirname(including), path)


def _chrony(files: _Files) -> Found:
    found: Found = []
    if main := files.first(CHRONY_CONFS):
        _chrony_file(files, *main, found, depth=0, sources_only=False)
    return found


def _chrony_file(files: _Files, path: str, lines: list[str], found: Found, *, depth: int,
                 sources_only: bool) -> None:
    for line in lines:
        words = line.split()
        if not words or words[0][0] in "#!;%":  # chrony's comment characters, only at the start of a line
            continue
        directive, args = words[0].lower(), words[1:]
        if directive in ("server", "pool") and args and "noselect" not in args:
            port = args[args.index("port", 1) + 1] if "port" in args[1:-1] else None  # args[0] is the name
            files.add_server(found, path, args[0], port)
        elif sources_only or not args:
            continue
        elif directive == "include":
            included = files.glob(_relative_to(path, args[0]))
            _chrony_includes(files, path, included, found, depth=depth, sources_only=False)
        elif directive in ("confdir", "sourcedir"):
            dirs = [_relative_to(path, d) for d in args]
            suffix = ".conf" if directive == "confdir" else ".sources"
            _chrony_includes(files, path, files.in_dirs(dirs, suffix), found, depth=depth,
                             sources_only=directive == "sourcedir")


def _chrony_includes(files: _Files, path: str, included: list[str], found: Found, *, depth: int,
                     sources_only: bool) -> None:
    if included and depth == MAX_INCLUDE_DEPTH:
        files.notes.append(f"{path}: includes nested deeper than {MAX_INCLUDE_DEPTH} levels not read")
        return
    for name in included:
        if (lines := files.lines(name)) is not None:
            _chrony_file(files, name, lines, found, depth=depth + 1, sources_only=sources_only)


def _ntpd(files: _Files) -> Found:
    found: Found = []
    if main := files.first(NTPD_CONFS):
        _ntpd_file(files, *main, found, depth=0)
    return found


def _ntpd_file(files: _Files, path: str, lines: list[str], found: Found, *, depth: int) -> None:
    for line in lines:
        words = line.split("#", 1)[0].split()  # ntpd: a comment runs from "#" to the end of the line
        directive, args = (words[0].lower(), words[1:]) if words else ("", [])
        if args[:1] in (["-4"], ["-6"]):  # `server -4 host`: the address family to resolve the name in
            args = args[1:]
        if directive in ("server", "pool") and args and "noselect" not in args:
            files.add_server(found, path, args[0])
        elif directive == "includefile" and args:
            if depth == MAX_INCLUDE_DEPTH:
                files.notes.append(f"{path}: includes nested deeper than {MAX_INCLUDE_DEPTH} levels not read")
            elif (included := files.lines(name := _relative_to(path, args[0]))) is not None:
                _ntpd_file(files, name, included, found, depth=depth + 1)


def _timesyncd(files: _Files) -> Found:
    lists: dict[str, Found] = {"NTP": [], "FallbackNTP": []}
    if main := files.first(TIMESYNCD_CONFS):
        _timesyncd_file(files, *main, lists)
    for dropin in files.in_dirs(TIMESYNCD_DROPIN_DIRS, ".conf"):
        if (lines := files.lines(dropin)) is not None:
            _timesyncd_file(files, dropin, lines, lists)
    return lists["NTP"] or lists["FallbackNTP"]


def _timesyncd_file(files: _Files, path: str, lines: list[str], lists: dict[str, Found]) -> None:
    section = ""
    for line in (line.strip() for line in lines):
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        key, sep, value = line.partition("=")
        servers = lists.get(key.strip())
        if section != "Time" or not sep or servers is None:  # comments (# ;) name no such key
            continue
        if not value.strip():  # an empty assignment clears the list so far
            servers.clear()
        for word in value.split():
            files.add_server(servers, path, word)


_DAEMONS: tuple[tuple[str, Callable[[_Files], Found]], ...] = (
    ("chrony", _chrony), ("ntpd", _ntpd), ("systemd-timesyncd", _timesyncd))
