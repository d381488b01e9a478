"""The pinned helm (hack/manifests.py) run against a test cluster, failing the test with the reason when it is not
built or when a command fails."""

from __future__ import annotations

import subprocess

import pytest

from hack import manifests
from tests.e2e.conftest import LocalCluster


def helm(cluster: LocalCluster, *args: str) -> str:
    try:
        binary = manifests.helm()
    except manifests.HelmMissing as e:
        pytest.fail(str(e), pytrace=False)
    proc = subprocess.run([str(binary), f"--kubeconfig={cluster.kubeconfig}", *args], capture_output=True,
                          text=True, timeout=240, check=False, env=manifests.helm_env())
    assert proc.returncode == 0, f"helm {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}"
    return proc.stdout
