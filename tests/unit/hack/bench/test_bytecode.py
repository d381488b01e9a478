"""`bytecode`: the repository's packages compiled as installing them would, before a benchmark times a process."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from hack.bench.lib import bytecode


def test_a_package_is_compiled_next_to_its_sources() -> None:
    source = bytecode.ROOT / "hack" / "bench" / "lib" / "bytecode.py"
    compiled = Path(importlib.util.cache_from_source(str(source)))
    compiled.unlink(missing_ok=True)
    bytecode.compile_as_installed("hack/bench/lib")
    assert compiled.is_file() and compiled.stat().st_size > 0
