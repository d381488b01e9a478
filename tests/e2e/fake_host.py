"""A fake host root for an agent playing a kwok node in e2e tests."""

from __future__ import annotations

import time
from pathlib import Path


def host_root(base: Path) -> Path:
    """A fake host: /dev/kmsg as a regular file, and a /proc/stat with the boot time."""
    root = base / "host"
    (root / "dev").mkdir(parents=True)
    (root / "proc").mkdir()
    (root / "dev" / "kmsg").write_text("")
    (root / "proc" / "stat").write_text(f"cpu  1 2 3 4\nbtime {int(time.time()) - 3600}\n")
    return root
