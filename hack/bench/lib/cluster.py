"""The local control plane around a benchmark: refuse to start without its binaries, start from a clean cluster."""

from __future__ import annotations

import sys
from collections.abc import Iterable

from hack.kcp import build, controlplane


def unbuilt(components: Iterable[str]) -> bool:
    """Whether any of `components` is not built (or another version); says which, and how to build, on stderr."""
    missing = build.missing(components)
    if missing:
        print(f"not built: {missing}; run `make build`", file=sys.stderr)
    return bool(missing)


def clean_cluster(name: str) -> controlplane.Cluster:
    """The cluster `name`, not running: one an earlier run left up (it died before its teardown) is taken down."""
    cluster = controlplane.Cluster.named(name)
    if cluster.load() and cluster.running():
        cluster.down()
    return cluster
