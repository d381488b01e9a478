"""Every host path the agent reads goes through one root (`--host-root`): `/` on a node, the host mount in
a pod (e.g. `/host`), a fixture directory in tests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class HostRoot:
    root: Path = Path("/")

    def path(self, host_path: str) -> Path:
        """`/proc/pressure/cpu` -> <root>/proc/pressure/cpu."""
        return self.root / host_path.lstrip("/")

    def read_text(self, host_path: str) -> str:
        return self.path(host_path).read_text()

    def read_sensor(self, host_path: str) -> str:
        """`read_text` for a kernel interface a check parses: any failure is a `ValueError` naming the path,
        which the check turns into an Unknown reading instead of a crash."""
        try:
            return self.read_text(host_path)
        except (OSError, UnicodeDecodeError) as e:
            raise ValueError(f"{host_path}: {getattr(e, 'strerror', None) or e}") from e
