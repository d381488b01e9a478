"""The zone article's example on kwok nodes: three zones of one node each; services A, B and C placed first, each on
its own node and of a different size; then service D, six replicas, placed by whichever scheduler the test runs.
Per-zone placements, skews and the share of D surviving its worst zone's loss are printed for the test's report."""

from __future__ import annotations

import datetime as dt
import threading
from collections import Counter

from kubernetes import client, watch

from tests.e2e.remediator_harness import pods_of, wait_running
from tests.waiting import wait_until

ZONE = "topology.kubernetes.io/zone"
TAG = "nodemedic.io/e2e-zone-example"
# A, B, C: what each zone's node already runs (of 7910m cpu and 31 GiB allocatable), heaviest in the first zone.
SERVICES = (("svc-a", "5", "20Gi"), ("svc-b", "3", "12Gi"), ("svc-c", "500m", "2Gi"))
D_REPLICAS = 6


def service(name: str, replicas: int, *, cpu: str, memory: str, node_selector: dict[str, str],
            scheduler: str = "") -> dict:
    labels = {"app": name}
    spec: dict = {"containers": [{"name": "app", "image": "registry.invalid/app:1",
                                  "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
                  "nodeSelector": node_selector}
    if scheduler:
        spec["schedulerName"] = scheduler
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": labels},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%",
                                                                            "maxUnavailable": "25%"}},
                     "template": {"metadata": {"labels": labels, "annotations": {"revision": "1"}},
                                  "spec": spec}}}


def place_services(apps: client.AppsV1Api, core: client.CoreV1Api, namespace: str, pool: list[str]) -> None:
    """A, B and C, one per node of `pool` (one node per zone)."""
    for (name, cpu, memory), node in zip(SERVICES, pool, strict=True):
        apps.create_namespaced_deployment(namespace, service(name, 1, cpu=cpu, memory=memory,
                                                             node_selector={"kubernetes.io/hostname": node}))
    for name, _, _ in SERVICES:
        wait_running(core, namespace, name, 1)


def service_d(tag: str, *, scheduler: str = "", spread: list | None = None) -> dict:
    d = service("svc-d", D_REPLICAS, cpu="400m", memory="1Gi", node_selector={TAG: tag}, scheduler=scheduler)
    if spread:
        d["spec"]["template"]["spec"]["topologySpreadConstraints"] = spread
    return d


def placed_d(apps: client.AppsV1Api, core: client.CoreV1Api, namespace: str, tag: str, **kw: object) -> Counter[str]:
    """D created (service_d's keywords), per zone once its six replicas run."""
    apps.create_namespaced_deployment(namespace, service_d(tag, **kw))  # type: ignore[arg-type]
    wait_running(core, namespace, "svc-d", D_REPLICAS)
    return per_zone(core, namespace, tag)


def per_zone(core: client.CoreV1Api, namespace: str, tag: str, app: str = "svc-d") -> Counter[str]:
    """zone -> Running pods of `app` there, every zone of the example's nodes (those tagged `tag`) listed, 0 too."""
    nodes = core.list_node().items
    zones = {n.metadata.name: n.metadata.labels.get(ZONE, "") for n in nodes}
    counts: Counter[str] = Counter({zones[n.metadata.name]: 0 for n in nodes
                                    if (n.metadata.labels or {}).get(TAG) == tag})
    for p in pods_of(core, namespace, app):
        if p.status.phase == "Running":
            counts[zones[p.spec.node_name]] += 1
    return counts


def skew(counts: Counter[str]) -> int:
    return max(counts.values()) - min(counts.values())


def surviving(counts: Counter[str]) -> float:
    total = sum(counts.values())
    return (total - max(counts.values())) / total if total else 1.0


def show(label: str, counts: Counter[str]) -> str:
    line = (f"zone-example {label}: D per zone " + " ".join(f"{z}={n}" for z, n in sorted(counts.items()))
            + f" skew={skew(counts)} surviving-worst-zone-loss={surviving(counts):.2f}")
    print(line)
    return line


def rolled_out(apps: client.AppsV1Api, namespace: str, name: str, replicas: int) -> bool:
    d = apps.read_namespaced_deployment(name, namespace)
    s = d.status
    return bool(s.observed_generation == d.metadata.generation and s.updated_replicas == replicas
                and s.replicas == replicas and s.available_replicas == replicas)


def rolling_update(apps: client.AppsV1Api, core: client.CoreV1Api, namespace: str, tag: str) -> Counter[str]:
    """A new revision of D; per zone once the Deployment controller finished the rollout."""
    stamp = dt.datetime.now(dt.UTC).isoformat()
    apps.patch_namespaced_deployment("svc-d", namespace,
                                     {"spec": {"template": {"metadata": {"annotations": {"revision": stamp}}}}})
    wait_until(lambda: rolled_out(apps, namespace, "svc-d", D_REPLICAS), timeout=120, what="svc-d rolled out")
    return wait_until(lambda: (c := per_zone(core, namespace, tag)) and sum(c.values()) == D_REPLICAS and c,
                      timeout=60, what="6 Running pods of svc-d after the rollout")


class PdbHistory:
    """Every status.currentHealthy the disruption controller writes to one PDB, from a watch, until `stop`."""

    def __init__(self, api: client.ApiClient, namespace: str, name: str) -> None:
        self.values: list[int] = []
        self.error: Exception | None = None
        self._stopping = False
        self._watch = watch.Watch()
        policy = client.PolicyV1Api(api)
        self._thread = threading.Thread(target=self._run, args=(policy, namespace, name), daemon=True)
        self._thread.start()

    def _run(self, policy: client.PolicyV1Api, namespace: str, name: str) -> None:
        try:
            for event in self._watch.stream(policy.list_namespaced_pod_disruption_budget, namespace,
                                            field_selector=f"metadata.name={name}", timeout_seconds=600):
                status = event["object"].status
                if status is not None and status.current_healthy is not None:
                    self.values.append(status.current_healthy)
        except Exception as e:  # noqa: BLE001 - a stopped watch ends its response mid-stream; anything else is news
            if not self._stopping:
                self.error = e

    def stop(self) -> list[int]:
        self._stopping = True
        self._watch.stop()
        self._thread.join(timeout=10)
        assert self.error is None, f"the PDB watch failed: {self.error!r}"
        return self.values
