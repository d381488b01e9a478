"""The repository's own packages compiled to bytecode before a measured run, as installing them (pip, the image)
does: a benchmark started with PYTHONDONTWRITEBYTECODE would otherwise time each process compiling every module of
its own on every start, which no installed copy does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def compile_as_installed(*packages: str) -> None:
    """Write the bytecode of `packages` (folders under the repository root) next to their sources."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", *packages], cwd=ROOT, check=True)
