"""What the benchmarks print besides their figures: progress notes, and the machine the figures come from."""

from __future__ import annotations

import os
import platform
import sys


def note(msg: str) -> None:
    """Progress, on stderr: stdout keeps only the figures."""
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def machine(*details: str) -> str:
    """`x86_64, 2 CPUs, Python 3.11.9`, with `details` after the CPU count."""
    return ", ".join((platform.machine(), f"{os.cpu_count()} CPUs", *details, f"Python {platform.python_version()}"))
