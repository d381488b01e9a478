"""The host's NVML, through NVIDIA's own binding (`nvidia-ml-py`, module `pynvml`), loaded from below the host root.

NVML is the driver's user-space library: it must be the one the host's driver came with (a library of another
version answers `NVML_ERROR_LIB_RM_VERSION_MISMATCH`), so the agent loads the host's `libnvidia-ml.so.1`, as the
NVIDIA container toolkit would mount it, from the usual driver library folders below the host root. A host without
one (no NVIDIA driver) costs a few `stat` calls per look and never imports the binding (about 2 MiB of bytecode).
"""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

from agent.host import HostRoot

LIBRARY = "libnvidia-ml.so.1"
# Where distributions, the GPU operator's driver container, GKE and cloud images put the driver's libraries.
DEFAULT_LIBRARY_DIRS = (
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/nvidia/lib64",
    "/usr/local/nvidia/lib",
    "/run/nvidia/driver/usr/lib/x86_64-linux-gnu",
    "/run/nvidia/driver/usr/lib64",
    "/home/kubernetes/bin/nvidia/lib64",
)


def find_library(host: HostRoot, dirs: tuple[str, ...]) -> Path | None:
    """The first `libnvidia-ml.so.1` in `dirs` below the host root, links followed as the host would."""
    for directory in dirs:
        path = host.resolve(f"{directory.rstrip('/')}/{LIBRARY}")
        if path.is_file():
            return path
    return None


def load_binding(library: Path) -> Any:
    """The `pynvml` module bound to `library` (pynvml loads `libnvidia-ml.so.1` by name from the loader's path only
    when none is bound yet). Raises OSError when the file is no loadable library."""
    import pynvml  # noqa: PLC0415 - only on hosts that have the library: the module is the agent's largest import

    if pynvml.nvmlLib is None:
        pynvml.nvmlLib = ctypes.CDLL(str(library))
    return pynvml
