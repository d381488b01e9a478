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
never followed), and any name or address that reaches the node itself (loopback_host: 127/8 in every inet_aton
spelling, ntpd's reference-clock pseudo-addresses 127.127.t.u among them, ::1, IPv4-mapped loopback, localhost and
names under it), which would measure the node against itself. A chrony `port N` option is kept ("host:N",
"[v6]:N").

Bounds, so a strange host costs little and never raises (config_files): bytes, files and directory entries are
bounded and what is beyond is noted; includes nest at most 5 deep (ntpd's own limit) and a file already read is not
read again (include loops). The work one read may do (includes and directories followed, path lookups, directory
entries listed) is bounded too: past a bound reading stops, and `refused` names the file, the line and the bound,
so the check reports its servers unknown rather than a partial list. Relative paths in a file are taken from that
file's directory.
"""

from __future__ import annotations

import ipaddress
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass

from agent.host import HostRoot
from agent.sensors.config_files import ConfigFiles, OverBudget
from agent.sensors.loopback_host import reaches_this_node
from nodemedic_common.inputs import quoted

MAX_INCLUDE_DEPTH = 5  # ntpd's MAXINCLUDELEVEL

CHRONY_CONFS = ("/etc/chrony/chrony.conf", "/etc/chrony.conf")
NTPD_CONFS = ("/etc/ntpsec/ntp.conf", "/etc/ntp.conf")
_SYSTEMD_DIRS = ("/etc/systemd", "/run/systemd", "/usr/local/lib/systemd", "/usr/lib/systemd")
TIMESYNCD_CONFS = tuple(f"{d}/timesyncd.conf" for d in _SYSTEMD_DIRS)
TIMESYNCD_DROPIN_DIRS = tuple(f"{d}/timesyncd.conf.d" for d in _SYSTEMD_DIRS)
LOOKED_FOR = (f"{', '.join(CHRONY_CONFS + NTPD_CONFS)}, "
              "/etc/systemd/timesyncd.conf and its drop-ins")

_HOSTNAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,252}")

Found = list[tuple[str, str]]  # (server, the host path of the file that named it), in file order


@dataclass(frozen=True)
class DaemonServers:
    daemon: str = ""  # "chrony", "ntpd" or "systemd-timesyncd"; "" when no daemon's files name a server
    servers: tuple[str, ...] = ()  # "host" or "host:port" / "[v6]:port", as ntp.split_server reads them
    files: tuple[str, ...] = ()  # host paths of the files that named `servers`
    read: tuple[str, ...] = ()  # host paths of every file read
    notes: tuple[str, ...] = ()  # "path: why" for each file skipped or cut short
    refused: str = ""  # "file:line: the bound on work" when reading stopped there; no servers are then known


def find_daemon_servers(host: HostRoot) -> DaemonServers:
    """The servers of the first daemon (chrony, ntpd, systemd-timesyncd) whose files name one, deduplicated."""
    files = ConfigFiles(host)
    try:
        for daemon, find in _DAEMONS:
            files.where = ""
            if found := find(files):
                return DaemonServers(daemon, tuple(dict.fromkeys(s for s, _ in found)),
                                     tuple(dict.fromkeys(f for _, f in found)), tuple(files.read), tuple(files.notes))
    except OverBudget as e:  # what was found so far may be cleared or outranked by what was not read
        return DaemonServers(read=tuple(files.read), notes=tuple(files.notes), refused=str(e))
    return DaemonServers(read=tuple(files.read), notes=tuple(files.notes))


def _add_server(files: ConfigFiles, found: Found, path: str, host: str, port: str | None = None) -> None:
    """`host` appended to `found` unless it is the node itself; a word that names no host is noted."""
    try:
        name = server_name(host, port)
    except ValueError as e:
        files.notes.append(f"{path}: {e}")
        return
    if name is not None:
        found.append((name, path))


def server_name(host: str, port: str | None = None) -> str | None:
    """`host` (and `port`) in the check's server syntax; None for the node itself (loopback_host). ValueError for
    garbage."""
    if ":" in host or "%" in host:
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ValueError(f"{quoted(host)} is no host name or address") from None
    elif not _HOSTNAME.fullmatch(host):
        raise ValueError(f"{quoted(host)} is no host name or address")
    if port is not None and (not port.isdecimal() or not 0 < int(port) < 65536):
        raise ValueError(f"{quoted(host)} has an invalid port {quoted(port)}")
    if reaches_this_node(host):
        return None
    if port is None:
        return host
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _relative_to(including: str, path: str) -> str:
    return posixpath.join(posixpath.dirname(including), path)


def _chrony(files: ConfigFiles) -> Found:
    found: Found = []
    if main := files.first(CHRONY_CONFS):
        _chrony_file(files, *main, found, depth=0, sources_only=False)
    return found


def _chrony_file(files: ConfigFiles, path: str, lines: list[str], found: Found, *, depth: int,
                 sources_only: bool) -> None:
    for number, line in enumerate(lines, 1):
        words = line.split()
        if not words or words[0][0] in "#!;%":  # chrony's comment characters, only at the start of a line
            continue
        directive, args = words[0].lower(), words[1:]
        if directive in ("server", "pool") and args and "noselect" not in args:
            port = args[args.index("port", 1) + 1] if "port" in args[1:-1] else None  # args[0] is the name
            _add_server(files, found, path, args[0], port)
        elif sources_only or not args:
            continue
        elif directive == "include":
            files.follow(f"{path}:{number}")
            included = files.glob(_relative_to(path, args[0]))
            _chrony_includes(files, path, included, found, depth=depth, sources_only=False)
        elif directive in ("confdir", "sourcedir"):
            files.follow(f"{path}:{number}", len(args))  # before the list is made: a line may name thousands
            dirs = [_relative_to(path, d) for d in args]
            suffix = ".conf" if directive == "confdir" else ".sources"
            _chrony_includes(files, path, files.in_dirs(dirs, suffix), found, depth=depth,
                             sources_only=directive == "sourcedir")


def _chrony_includes(files: ConfigFiles, path: str, included: list[str], found: Found, *, depth: int,
                     sources_only: bool) -> None:
    if included and depth == MAX_INCLUDE_DEPTH:
        files.notes.append(f"{path}: includes nested deeper than {MAX_INCLUDE_DEPTH} levels not read")
        return
    for name in included:
        if (lines := files.lines(name)) is not None:
            _chrony_file(files, name, lines, found, depth=depth + 1, sources_only=sources_only)


def _ntpd(files: ConfigFiles) -> Found:
    found: Found = []
    if main := files.first(NTPD_CONFS):
        _ntpd_file(files, *main, found, depth=0)
    return found


def _ntpd_file(files: ConfigFiles, path: str, lines: list[str], found: Found, *, depth: int) -> None:
    for number, line in enumerate(lines, 1):
        words = line.split("#", 1)[0].split()  # ntpd: a comment runs from "#" to the end of the line
        directive, args = (words[0].lower(), words[1:]) if words else ("", [])
        if args[:1] in (["-4"], ["-6"]):  # `server -4 host`: the address family to resolve the name in
            args = args[1:]
        if directive in ("server", "pool") and args and "noselect" not in args:
            _add_server(files, found, path, args[0])
        elif directive == "includefile" and args:
            if depth == MAX_INCLUDE_DEPTH:
                files.notes.append(f"{path}: includes nested deeper than {MAX_INCLUDE_DEPTH} levels not read")
                continue
            files.follow(f"{path}:{number}")
            if (included := files.lines(name := _relative_to(path, args[0]))) is not None:
                _ntpd_file(files, name, included, found, depth=depth + 1)


def _timesyncd(files: ConfigFiles) -> Found:
    lists: dict[str, Found] = {"NTP": [], "FallbackNTP": []}
    if main := files.first(TIMESYNCD_CONFS):
        _timesyncd_file(files, *main, lists)
    for dropin in files.in_dirs(TIMESYNCD_DROPIN_DIRS, ".conf"):
        if (lines := files.lines(dropin)) is not None:
            _timesyncd_file(files, dropin, lines, lists)
    return lists["NTP"] or lists["FallbackNTP"]


def _timesyncd_file(files: ConfigFiles, path: str, lines: list[str], lists: dict[str, Found]) -> None:
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
            _add_server(files, servers, path, word)


_DAEMONS: tuple[tuple[str, Callable[[ConfigFiles], Found]], ...] = (
    ("chrony", _chrony), ("ntpd", _ntpd), ("systemd-timesyncd", _timesyncd))
