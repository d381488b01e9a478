"""What a process and its descendants cost now, read from /proc (plugins run as children)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


@dataclass(frozen=True)
class TreeUsage:
    """A process tree at one moment. Clock ticks (utime + stime) include threads that have exited but come in 10 ms
    steps, coarse for a process that uses a few a minute; the scheduler's runtime per thread (`task/*/schedstat`) is
    exact but counts only the threads still alive: the benchmarks print both."""

    rss: int  # bytes, VmRSS summed
    cpu_ticks: int
    cpu_nanos: int


def vm_rss(pid: int) -> int | None:
    """The process's resident set in bytes; None once it is gone."""
    try:
        status = (PROC / str(pid) / "status").read_text()
    except OSError:
        return None
    return next((int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith("VmRSS:")), None)


def tree_usage(pid: int) -> TreeUsage:
    rss = ticks = nanos = 0
    for p in descendants(pid):
        with contextlib.suppress(OSError, IndexError, ValueError):  # a process of the tree exiting meanwhile
            fields = (PROC / str(p) / "stat").read_text().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
            rss += vm_rss(p) or 0
            for task in (PROC / str(p) / "task").iterdir():
                with contextlib.suppress(OSError, IndexError, ValueError):
                    nanos += int((task / "schedstat").read_text().split()[0])
    return TreeUsage(rss=rss, cpu_ticks=ticks, cpu_nanos=nanos)


def descendants(pid: int) -> list[int]:
    """`pid` and every process below it (the parent links of all of /proc, read once)."""
    children: dict[int, list[int]] = {}
    for d in PROC.iterdir():
        if d.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


def commands(pid: int) -> list[str]:
    """The command name (`comm`) of `pid` and of every process below it, skipping any that exit meanwhile."""
    names = []
    for p in descendants(pid):
        with contextlib.suppress(OSError):
            names.append((PROC / str(p) / "comm").read_text().strip())
    return names


def open_journal_files(pid: int) -> int:
    """How many systemd journal files (`*.journal`, `*.journal~`) `pid` holds open: the agent reads them itself."""
    count = 0
    with contextlib.suppress(OSError):
        for fd in (PROC / str(pid) / "fd").iterdir():
            with contextlib.suppress(OSError):
                count += fd.readlink().name.endswith((".journal", ".journal~"))
    return count
