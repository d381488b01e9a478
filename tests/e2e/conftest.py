"""The real local control plane for end-to-end tests.

One cluster per test session (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok), or
the one named by NODEMEDIC_TEST_KUBECONFIG. A test that needs it FAILS when it cannot start: never skips.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from hack.kcp import build, controlplane, karpenter, nodes
from tests.e2e.agent_harness import Agent
from tests.waiting import wait_until

NODE_COUNT = 4  # three zones, one of them with two nodes


@dataclass
class LocalCluster:
    kubeconfig: Path
    api: client.ApiClient
    owned: controlplane.Cluster | None  # None when reusing a cluster someone else started

    def node(self, name: str, **kwargs: object) -> dict:
        """A kwok node manifest like the ones `hack/cluster up` creates (for per-test nodes)."""
        return nodes.node_manifest(name, nodes.ZONES[0], **kwargs)  # type: ignore[arg-type]


@contextlib.contextmanager
def _started(name: str, node_count: int, *, scheduler_config: Callable[[Path], str] | None = None,
             audit: bool = False, real_nodes: int = 0, admission_config: str | None = None,
             kwok_metrics: bool = False) -> Iterator[LocalCluster]:
    """A control plane of our own: fails (never skips) when it is not built or cannot start; afterwards stops it
    and fails if any process it started is still running. `real_nodes=1`: with the real node (hack/kcp/realnode.py),
    which also needs the image built for this code."""
    missing = build.missing(build.BINARIES if not real_nodes else list(build.COMPONENTS))
    if missing:
        pytest.fail(
            f"the local control plane is not built ({', '.join(missing)} missing): run `make build` "
            "(or `hack/cluster build`); end-to-end tests need it and never skip",
            pytrace=False,
        )
    owned = controlplane.Cluster.named(name)
    config_path = None
    if scheduler_config is not None:  # a KubeSchedulerConfiguration names the kubeconfig it connects with
        # Beside the state directory, which `up` recreates empty.
        config_path = owned.state_dir.with_name(owned.state_dir.name + "-scheduler-config.yaml")
        config_path.parent.mkdir(parents=True, exist_ok=True)
        config_path.write_text(scheduler_config(owned.kubeconfig))
    try:
        owned.up(node_count, scheduler_config=config_path, audit=audit, timeout=180, real_nodes=real_nodes,
                 admission_config=admission_config, kwok_metrics=kwok_metrics)
    except Exception as e:  # noqa: BLE001 - any start-up failure fails the tests with its message
        try:
            owned.down()
        except Exception as cleanup:  # noqa: BLE001 - told beside the start-up failure, which it must not hide
            pytest.fail(f"the local control plane failed to start: {e}; stopping what started failed too: {cleanup}",
                        pytrace=False)
        pytest.fail(f"the local control plane failed to start: {e}", pytrace=False)
    api = config.new_client_from_config(config_file=str(owned.kubeconfig))
    try:
        yield LocalCluster(owned.kubeconfig, api, owned)
    finally:
        api.close()
        owned.down()  # raises when any process it started, or any naming its state dir, is still running
        if config_path is not None:
            config_path.unlink(missing_ok=True)
        assert not owned.running() and not owned.strays()


@pytest.fixture
def agents() -> Iterator[list[Agent]]:
    """Agent processes a test started: stopped after it, whatever the outcome."""
    started: list[Agent] = []
    yield started
    for a in started:
        a.stop()


@pytest.fixture
def processes() -> Iterator[list]:
    """Remediators, pool watchers and other things with a `stop()` a test started: stopped after it, whatever the
    outcome (a failed assertion must not leave a process or a polling thread behind for the next test)."""
    started: list = []
    yield started
    for p in started:
        p.stop()


@pytest.fixture(scope="session")
def cluster() -> Iterator[LocalCluster]:
    reuse = os.environ.get("NODEMEDIC_TEST_KUBECONFIG")
    if reuse:
        if not Path(reuse).exists():
            pytest.fail(f"NODEMEDIC_TEST_KUBECONFIG={reuse} does not exist", pytrace=False)
        yield LocalCluster(Path(reuse), config.new_client_from_config(config_file=reuse), None)
        return
    with _started(f"pytest-{os.getpid()}", NODE_COUNT) as started:
        yield started


@pytest.fixture
def private_cluster() -> Iterator[LocalCluster]:
    """A control plane of its own (one kwok node, `kwok-node-0`) for a test that disrupts it, e.g. stops the API
    server: after an outage kube-controller-manager's informers sit in their retry back-off for up to ~30 s, which
    would stall the tests that follow on a shared cluster."""
    with _started(f"pytest-{os.getpid()}-private-{secrets.token_hex(2)}", 1) as started:
        yield started


# GKE's kube-apiserver configuration of the ResourceQuota admission plugin ("Limit Priority Class consumption by
# default" in the Kubernetes docs): a pod of either class is admitted only in a namespace where a ResourceQuota
# covers the class; GKE's own namespaces (kube-system) carry one.
GKE_PRIORITY_CLASS_LIMIT = """\
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ResourceQuota
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: ResourceQuotaConfiguration
    limitedResources:
    - resource: pods
      matchScopes:
      - scopeName: PriorityClass
        operator: In
        values: [system-node-critical, system-cluster-critical]
"""


@pytest.fixture(scope="module")
def gke_priority_cluster() -> Iterator[LocalCluster]:
    """A control plane of its own (one kwok node) whose API server limits the system-* priority classes as GKE's
    does (GKE_PRIORITY_CLASS_LIMIT): the shared cluster stays as it is for every other test."""
    with _started(f"pytest-{os.getpid()}-gke-{secrets.token_hex(2)}", 1,
                  admission_config=GKE_PRIORITY_CLASS_LIMIT) as started:
        yield started


@pytest.fixture(scope="module")
def karpenter_cluster() -> Iterator[LocalCluster]:
    """A control plane of its own with no static node and Karpenter (kwok provider) running, for the tests of the
    whole chain: every node is a NodeClaim a test's NodePool made. Karpenter is recorded among the cluster's
    processes, so it is stopped with them (first) and the stray check covers it. The audit log is on: when a pod
    leaves a node it should not have, a test names who took it away (audit_log.pod_removals)."""
    with _started(f"pytest-{os.getpid()}-karpenter-{secrets.token_hex(2)}", 0, audit=True) as started:
        assert started.owned is not None
        try:
            karpenter.start(started.owned, karpenter.Options(node_pools=()))
        except Exception as e:  # noqa: BLE001 - a start-up failure fails the tests with its message
            pytest.fail(f"Karpenter failed to start: {e}", pytrace=False)
        yield started


@pytest.fixture(scope="session")
def core(cluster: LocalCluster) -> client.CoreV1Api:
    return client.CoreV1Api(cluster.api)


@pytest.fixture(scope="session")
def apps(cluster: LocalCluster) -> client.AppsV1Api:
    return client.AppsV1Api(cluster.api)


@pytest.fixture(scope="session")
def policy_api(cluster: LocalCluster) -> client.PolicyV1Api:
    return client.PolicyV1Api(cluster.api)


@pytest.fixture(scope="session")
def coordination(cluster: LocalCluster) -> client.CoordinationV1Api:
    return client.CoordinationV1Api(cluster.api)


@pytest.fixture
def node_pool(cluster: LocalCluster, core: client.CoreV1Api) -> Iterator[Callable[..., list[str]]]:
    """Factory: `node_pool(3)` creates 3 fresh Ready kwok nodes for this test alone (deleted afterwards)."""
    created: list[str] = []

    def make(count: int, **kwargs: object) -> list[str]:
        suffix = secrets.token_hex(3)
        names = [f"pool-{suffix}-{i}" for i in range(count)]
        for i, n in enumerate(names):
            manifest = nodes.node_manifest(n, nodes.ZONES[i % len(nodes.ZONES)], **kwargs)  # type: ignore[arg-type]
            manifest["metadata"]["labels"]["nodemedic.io/e2e-pool"] = suffix
            core.create_node(manifest)
            created.append(n)

        def ready() -> bool:
            return all(any(c.type == "Ready" and c.status == "True" for c in core.read_node(n).status.conditions or [])
                       for n in names)

        wait_until(ready, timeout=30, what=f"kwok to make {names} Ready")
        return names

    yield make
    for n in created:
        with contextlib.suppress(ApiException):
            core.delete_node(n)


@pytest.fixture
def namespace(request: pytest.FixtureRequest, core: client.CoreV1Api) -> Iterator[str]:
    """A fresh namespace per test, ready for pods (its default ServiceAccount exists)."""
    base = re.sub(r"[^a-z0-9-]", "-", request.node.name.lower())[:40].strip("-")
    name = f"{base}-{secrets.token_hex(3)}"
    core.create_namespace({"metadata": {"name": name, "labels": {"nodemedic.io/e2e": "true"}}})

    def has_default_sa() -> bool:
        try:
            core.read_namespaced_service_account("default", name)
            return True
        except ApiException as e:
            if e.status == 404:
                return False
            raise

    wait_until(has_default_sa, timeout=30, what=f"ServiceAccount {name}/default")
    yield name
    core.delete_namespace(name)


@pytest.fixture
def figures(request: pytest.FixtureRequest, record_property: Callable[[str, object], None]) -> object:
    """The chaos scenarios' figures (tests/e2e/chaos.py): printed at once, kept in the report."""
    from tests.e2e.chaos import Figures  # noqa: PLC0415 - chaos.py builds on this module

    scenario = request.node.module.__name__.rsplit(".", 1)[-1].removeprefix("test_chaos_")
    return Figures(scenario, request.config, record_property)
