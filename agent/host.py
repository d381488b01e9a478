"""Every host path the agent reads goes through one root (`--host-root`): `/` on a node, the host mount in
a pod (e.g. `/host`), a fixture directory in tests."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

_READ_SIZE = 65536  # a /proc file is generated whole on its first read when it fits


@dataclass(frozen=True)
class HostRoot:
    root: Path = Path("/")

    def path(self, host_path: str) -> Path:
        """`/proc/pressure/cpu` -> <root>/proc/pressure/cpu."""
        return self.root / host_path.lstrip("/")

    def resolve(self, host_path: str) -> Path:
        """`path`, with symlinks followed as the host would: an absolute link (`/var/run -> /run`) stays under the
        root. After 40 links (Linux's MAXSYMLINKS) the rest is taken as it is, which stops link loops."""
        if self.root == Path("/"):
            return Path(host_path)
        current = PurePosixPath("/")
        parts = list(PurePosixPath(host_path).parts[1:])
        hops = 0
        while parts:
            part = parts.pop(0)
            if part == "..":
                current = current.parent
                continue
            candidate = current / part
            real = self.path(str(candidate))
            if hops < 40 and real.is_symlink():
                hops += 1
                target = PurePosixPath(os.readlink(real))
                parts = list(target.parts[1:] if target.is_absolute() else target.parts) + parts
                current = PurePosixPath("/") if target.is_absolute() else current
            else:
                current = candidate
        return self.path(str(current))

    def read_text(self, host_path: str) -> str:
        """The file as text, as `Path.read_text` gives it (UTF-8, universal newlines), read with plain `os` calls: the
        checks read a few dozen small kernel files every round, and pathlib's and io's layers cost more than the
        reads."""
        fd = os.open(f"{self._prefix}/{host_path.lstrip('/')}", os.O_RDONLY | os.O_CLOEXEC)
        try:
            chunks = []
            while chunk := os.read(fd, _READ_SIZE):
                chunks.append(chunk)
        finally:
            os.close(fd)
        text = b"".join(chunks).decode()
        return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text

    @functools.cached_property
    def _prefix(self) -> str:
        """The root as a string without its trailing slash ("" for `/`)."""
        return str(self.root).rstrip("/")

    def read_sensor(self, host_path: str) -> str:
        """`read_text` for a kernel interface a check parses: any failure is a `ValueError` naming the path,
        which the check turns into an Unknown reading instead of a crash."""
        try:
            return self.read_text(host_path)
        except (OSError, UnicodeDecodeError) as e:
            raise ValueError(f"{host_path}: {getattr(e, 'strerror', None) or e}") from e
