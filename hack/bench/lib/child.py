"""Ending a program the benchmark started, by its own Popen (never by name)."""

from __future__ import annotations

import contextlib
import subprocess


def stop(proc: subprocess.Popen[bytes], grace: float = 15.0) -> None:
    """SIGTERM, `grace` seconds to exit, then SIGKILL; reaped either way."""
    if proc.poll() is None:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(grace)
    if proc.poll() is None:
        proc.kill()
        proc.wait()
