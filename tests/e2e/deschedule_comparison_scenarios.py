"""The scenarios of test_descheduler_comparison_deschedule.py (RemovePodsViolatingNodeAffinity,
RemovePodsViolatingInterPodAntiAffinity, RemovePodsHavingTooManyRestarts, PodLifeTime and RemoveFailedPods next
to descheduler's): pods whose status says what these strategies read (restart counts, waiting/terminated reasons,
exit codes, phase Failed), written once kwok has them Running. descheduler_workloads.py builds on some of them."""

from __future__ import annotations

from typing import Any

from tests.e2e.descheduler_comparison_harness import Node, Pod, Scenario

ZONE_A, ZONE_B, ZONE_C = "zone-a", "zone-b", "zone-c"
SSD, HDD = (("disk", "ssd"),), (("disk", "hdd"),)


def _requires(key: str, value: str) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}]}}}


def _prefers(key: str, value: str, weight: int = 10) -> dict[str, Any]:
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": weight, "preference": {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}}]}}


def avoids(app: str, key: str = "kubernetes.io/hostname") -> dict[str, Any]:
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}]}}


def restarted(count: int, waiting: str = "") -> dict[str, Any]:
    state: dict[str, Any] = {"waiting": {"reason": waiting}} if waiting else {
        "running": {"startedAt": "2024-05-01T00:00:00Z"}}
    return {"containerStatuses": [{"name": "app", "restartCount": count, "state": state}]}


def failed(reason: str, code: int, pod_reason: str = "") -> dict[str, Any]:
    status: dict[str, Any] = {"phase": "Failed", "containerStatuses": [{"name": "app", "restartCount": 0, "state": {
        "terminated": {"reason": reason, "exitCode": code, "startedAt": "2024-05-01T00:00:00Z",
                       "finishedAt": "2024-05-01T00:01:00Z"}}}]}
    if pod_reason:
        status["reason"] = pod_reason
    return status


def _nodes(prefix: str, *labels: tuple[tuple[str, str], ...]) -> tuple[Node, ...]:
    zones = (ZONE_A, ZONE_B, ZONE_C)
    return tuple(Node(f"{prefix}-{i}", zones[i % 3], labels=lab) for i, lab in enumerate(labels))


def node_affinity_required() -> Scenario:
    ns = _nodes("nar", HDD, SSD, SSD)
    hdd = ns[0].name
    return Scenario(
        "node-affinity-required",
        "pods that require disk=ssd on an hdd node; one requires a label no node has; one is where it belongs",
        ns,
        (Pod("wants-ssd-1", hdd, 500, 512, 100, affinity=_requires("disk", "ssd")),
         Pod("wants-ssd-2", hdd, 500, 512, 110, affinity=_requires("disk", "ssd")),
         Pod("wants-nvme", hdd, 500, 512, 120, affinity=_requires("disk", "nvme")),  # fits nowhere: both keep it
         Pod("happy", ns[1].name, 500, 512, 130, affinity=_requires("disk", "ssd")),
         Pod("bare", hdd, 500, 512, 140, owner=None, affinity=_requires("disk", "ssd"))),  # bare: protected
        {"RemovePodsViolatingNodeAffinity": {"nodeAffinityType": ["requiredDuringSchedulingIgnoredDuringExecution"]}},
    )


def _node_affinity_preferred() -> Scenario:
    hdd, ssd_full, other = (Node("nap-hdd", ZONE_A, labels=HDD), Node("nap-ssd-full", ZONE_B, labels=SSD),
                            Node("nap-other", ZONE_C, labels=HDD))
    ssd_free = Node("nap-ssd-free", ZONE_C, labels=(("disk", "ssd"), ("pool", "fast")))
    return Scenario(
        "node-affinity-preferred",
        "pods preferring ssd on an hdd node: one fits the free ssd node; one prefers pool=slow, which no node has",
        (hdd, ssd_full, other, ssd_free),
        (Pod("likes-ssd", hdd.name, 500, 512, 100, affinity=_prefers("disk", "ssd")),
         Pod("likes-full", hdd.name, 3000, 512, 110, labels=(("tier", "x"),),
             affinity=_prefers("pool", "slow")),
         Pod("filler", ssd_full.name, 9000, 512, 900, labels=(("pool-filler", "1"),)),
         Pod("content", ssd_free.name, 500, 512, 120, affinity=_prefers("disk", "ssd"))),
        {"RemovePodsViolatingNodeAffinity": {"nodeAffinityType": ["preferredDuringSchedulingIgnoredDuringExecution"]}},
        # likes-full: no node has pool=slow at all, so no node scores higher: both keep it.
    )


def _node_affinity_preferred_unreachable() -> Scenario:
    hdd = Node("nau-hdd", ZONE_A, labels=HDD)
    ssd = Node("nau-ssd", ZONE_B, labels=SSD)
    other = Node("nau-other", ZONE_C, labels=HDD)
    return Scenario(
        "node-affinity-preferred-unreachable",
        "a pod preferring ssd on an hdd node; the only ssd node is full, another hdd node has room",
        (hdd, ssd, other),
        (Pod("likes-ssd", hdd.name, 2000, 512, 100, affinity=_prefers("disk", "ssd")),
         Pod("filler", ssd.name, 9500, 512, 900)),
        {"RemovePodsViolatingNodeAffinity": {"nodeAffinityType": ["preferredDuringSchedulingIgnoredDuringExecution"]}},
        # descheduler: ssd scores 10 > 0 here, and the pod fits *some* node (nau-other): evicted, to land on another
        # hdd node. nodemedic: no node that scores higher takes it.
        only_descheduler={"likes-ssd": "DS-AFF-1"},
    )


def _anti_affinity_node() -> Scenario:
    ns = _nodes("aan", (), (), (), ())  # room for both evicted web pods on nodes of their own
    n0 = ns[0].name
    return Scenario(
        "anti-affinity-node",
        "three web pods that refuse to share a node, all on one node; the lowest priority one is bare (protected)",
        ns,
        (Pod("web-bare", n0, 500, 512, 100, owner=None, labels=(("app", "web"),), affinity=avoids("web")),
         Pod("web-1", n0, 500, 512, 200, owner="web", affinity=avoids("web")),
         Pod("web-2", n0, 500, 512, 300, owner="web", affinity=avoids("web")),
         Pod("db", n0, 500, 512, 400, affinity=avoids("db")),  # no other db pod: violates nothing
         Pod("web-far", ns[1].name, 500, 512, 500, owner="web", affinity=avoids("web"))),
        {"RemovePodsViolatingInterPodAntiAffinity": {}},
        # Both: web-bare cannot go, web-1 goes (still sharing with web-bare, web-2), then web-2 (web-bare remains).
    )


def _anti_affinity_zone() -> Scenario:
    ns = _nodes("aaz", (), (), (), ())  # zones a, b, c, a
    return Scenario(
        "anti-affinity-zone",
        "api-1 refuses to share a zone with api pods; api-2 (no term) runs in its zone on another node",
        ns,
        (Pod("api-1", ns[0].name, 500, 512, 100, owner="api", affinity=avoids("api", "topology.kubernetes.io/zone")),
         Pod("api-2", ns[3].name, 500, 512, 200, owner="api"),
         Pod("api-3", ns[1].name, 500, 512, 300, owner="api", affinity=avoids("api", "topology.kubernetes.io/zone"))),
        {"RemovePodsViolatingInterPodAntiAffinity": {}},
        # Both: api-1 goes. (Only api-1 has the term: descheduler walks nodes in its lister's order, so with two
        # pods that repel each other across nodes which one goes would be a coin toss.)
    )


def _restarts() -> Scenario:
    ns = _nodes("rr", (), (), ())
    n0 = ns[0].name
    return Scenario(
        "too-many-restarts",
        "restart counts 150, 100 (the threshold) and 99 on one node, 300 on another, threshold 100",
        ns,
        (Pod("r150", n0, 500, 512, 100, status=restarted(150)),
         Pod("r100", n0, 500, 512, 110, status=restarted(100)),
         Pod("r99", n0, 500, 512, 120, status=restarted(99)),
         Pod("r300", ns[1].name, 500, 512, 130, status=restarted(300)),
         Pod("r300-bare", ns[1].name, 500, 512, 140, owner=None, status=restarted(300))),
        {"RemovePodsHavingTooManyRestarts": {"podRestartThreshold": 100}},
    )


def restarts_crashloop() -> Scenario:
    ns = _nodes("rc", (), (), ())
    n0 = ns[0].name
    return Scenario(
        "too-many-restarts-crashloop",
        "states [CrashLoopBackOff]: 120 restarts waiting in CrashLoopBackOff, 120 running, 5 in CrashLoopBackOff",
        ns,
        (Pod("looping", n0, 500, 512, 100, status=restarted(120, "CrashLoopBackOff")),
         Pod("recovered", n0, 500, 512, 110, status=restarted(120)),
         Pod("young-loop", n0, 500, 512, 120, status=restarted(5, "CrashLoopBackOff")),
         Pod("pulling", ns[1].name, 500, 512, 130, status=restarted(200, "ImagePullBackOff"))),
        {"RemovePodsHavingTooManyRestarts": {"podRestartThreshold": 100, "states": ["CrashLoopBackOff"]}},
    )


def _lifetime_states() -> Scenario:
    ns = _nodes("ls", (), (), ())
    n0 = ns[0].name
    return Scenario(
        "pod-lifetime-states",
        "states [CrashLoopBackOff, Failed]: a looping pod, a pod pulling its image, a Failed pod, a running one",
        ns,
        (Pod("looping", n0, 500, 512, 100, status=restarted(3, "CrashLoopBackOff")),
         Pod("pulling", n0, 500, 512, 110, status=restarted(0, "ImagePullBackOff")),
         Pod("failed", n0, 500, 512, 120, status=failed("Error", 1)),
         Pod("running", ns[1].name, 500, 512, 130)),
        {"PodLifeTime": {"states": ["CrashLoopBackOff", "Failed"]}},
    )


def _lifetime_age() -> Scenario:
    ns = _nodes("la", (), (), ())
    n0, n1 = ns[0].name, ns[1].name
    batch = (("tier", "batch"),)
    return Scenario(
        "pod-lifetime-age",
        "maxPodLifeTimeSeconds 2 (every pod is 3 s old before either tool runs) with labelSelector tier=batch",
        ns,
        (Pod("batch-1", n0, 500, 512, 100, labels=batch), Pod("batch-2", n1, 500, 512, 110, labels=batch),
         Pod("batch-bare", n1, 500, 512, 120, owner=None, labels=batch),  # bare: protected on both sides
         Pod("web", n0, 500, 512, 130)),
        {"PodLifeTime": {"maxPodLifeTimeSeconds": 2, "labelSelector": {"matchLabels": {"tier": "batch"}}}},
        pods_older_than=3,
    )


def _failed_pods() -> Scenario:
    ns = _nodes("fp", (), (), ())
    n0 = ns[0].name
    return Scenario(
        "failed-pods-reasons",
        "reasons [OOMKilled, Evicted]: Failed pods OOMKilled (137), Error (1), one with pod reason Evicted",
        ns,
        (Pod("oom", n0, 500, 512, 100, status=failed("OOMKilled", 137)),
         Pod("error", n0, 500, 512, 110, status=failed("Error", 1)),
         Pod("evicted", n0, 500, 512, 120, status=failed("Error", 2, pod_reason="Evicted")),
         Pod("oom-bare", ns[1].name, 500, 512, 130, owner=None, status=failed("OOMKilled", 137)),
         Pod("running", ns[1].name, 500, 512, 140)),
        {"RemoveFailedPods": {"reasons": ["OOMKilled", "Evicted"], "minPodLifetimeSeconds": 0}},
    )


def _failed_pods_no_destination() -> Scenario:
    n0 = Node("fn-0", ZONE_A)
    tainted = (Node("fn-1", ZONE_B, (("compare.nodemedic.io/reserved", "true", "NoSchedule"),)),
               Node("fn-2", ZONE_C, (("compare.nodemedic.io/reserved", "true", "NoSchedule"),)))
    return Scenario(
        "failed-pods-exit-codes",
        "exitCodes [1]: Failed pods exiting 1 and 2; every other node is tainted, so no pod fits elsewhere",
        (n0, *tainted),
        (Pod("exit-1", n0.name, 500, 512, 100, status=failed("Error", 1)),
         Pod("exit-2", n0.name, 500, 512, 110, status=failed("Error", 2)),
         Pod("running", n0.name, 500, 512, 120)),
        {"RemoveFailedPods": {"exitCodes": [1], "minPodLifetimeSeconds": 0}},
        # descheduler's nodeFit asks a Failed pod to fit another node; nodemedic does not (it needs no room).
        only_nodemedic={"exit-1": "DS-TERM-1"},
    )


SCENARIOS = [node_affinity_required(), _node_affinity_preferred(), _node_affinity_preferred_unreachable(),
             _anti_affinity_node(), _anti_affinity_zone(), _restarts(), restarts_crashloop(), _lifetime_states(),
             _lifetime_age(), _failed_pods(), _failed_pods_no_destination()]
