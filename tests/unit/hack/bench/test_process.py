"""hack/bench/lib/process.py and child.py on real processes: a tree's cost counts its children; a child that
ignores SIGTERM is killed."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

from hack.bench.lib import child
from hack.bench.lib.process import commands, descendants, open_journal_files, tree_usage, vm_rss

PARENT_OF_A_SLEEPER = ("import subprocess; p = subprocess.Popen(['sleep', '60']); print(p.pid, flush=True); "
                       "p.wait()")
DEAF = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); "
        "time.sleep(60)")


def test_a_tree_counts_the_children_of_its_root() -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT_OF_A_SLEEPER], stdout=subprocess.PIPE)
    assert parent.stdout is not None
    sleeper = int(parent.stdout.readline())
    try:
        assert descendants(parent.pid) == [parent.pid, sleeper]
        assert commands(parent.pid).count("sleep") == 1  # how the agent benchmark counts its tree's processes
        alone, tree = vm_rss(parent.pid), tree_usage(parent.pid)
        assert alone is not None and tree.rss > alone  # the sleeper's resident pages are in the tree's
        assert tree.cpu_nanos > 0  # the interpreter's start-up ran on a thread still alive
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(sleeper, signal.SIGKILL)  # our grandchild, by the PID its parent printed
        child.stop(parent, grace=5)


def test_a_process_that_is_gone_has_no_rss() -> None:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    assert vm_rss(int(done.stdout)) is None


def test_a_child_ignoring_sigterm_is_killed_after_the_grace() -> None:
    proc = subprocess.Popen([sys.executable, "-c", DEAF], stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"up\n"

    child.stop(proc, grace=0.2)

    assert proc.returncode == -signal.SIGKILL
    assert vm_rss(proc.pid) is None  # reaped, not left a zombie


def test_the_journal_files_a_process_holds_open_are_counted(tmp_path: Path) -> None:
    before = open_journal_files(os.getpid())
    with (tmp_path / "system.journal").open("wb"), (tmp_path / "user-1000.journal~").open("wb"), \
            (tmp_path / "other.log").open("wb"):
        assert open_journal_files(os.getpid()) == before + 2
    assert open_journal_files(os.getpid()) == before
