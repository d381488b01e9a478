"""Chaos 4: notification sinks that answer 500 or hang, while the remediator evicts 20 pods.

Two webhook sinks on a local HTTP server: `broken` answers every request 500 (and is retried, with back-off, many
times), `hung` accepts the request and never answers (its timeout is longer than the test). The policy's
notification queue holds 5 alerts per sink. Then:
- every eviction is done while `hung` still holds its first request open and `broken` is still retrying its first
  alert: the remediation never waited for a sink;
- each sink's queue never held more than its size (its depth gauge, polled throughout);
- every alert is accounted for per sink: dropped (counted, and logged once each) + queued + in flight + finished.
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from kubernetes import client

from tests.e2e.audit_log import audit_calls, evictions, remediator_calls
from tests.e2e.chaos import Figures, audited_cluster
from tests.e2e.remediator_harness import cordon, deployment, set_condition, start_remediator, wait_running
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e

SICK, OTHERS = "kwok-node-0", ["kwok-node-1", "kwok-node-2"]
PODS, QUEUE = 20, 5


class Sinks(ThreadingHTTPServer):
    """/broken answers 500 at once; /hung holds every request until `release` is set."""

    daemon_threads = True

    def __init__(self) -> None:
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.counts = {"broken": 0, "hung": 0}
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                name = self.path.strip("/")
                with server.lock:
                    server.counts[name] += 1
                if name == "hung":
                    server.release.wait(300)
                    self.send_response(200)
                else:
                    self.send_response(500)
                self.end_headers()

            def log_message(self, *_: object) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)

    @property
    def port(self) -> int:
        return int(self.server_address[1])


def policy(port: int) -> str:
    return f"""
apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
rules:
- name: kernel-deadlock
  condition: {{type: KernelDeadlock, status: "True", for: 1s}}
  taint: {{key: nodemedic.io/kernel-deadlock, value: "true", effect: NoSchedule}}
  evict: true
  recoverAfter: 10m
evictor:
  namespaces: {{include: [chaos]}}
limits: {{ownerCooldown: 0s, maxNoOfPodsToEvictPerNode: 50, maxNoOfPodsToEvictTotal: 100}}
safety: {{maxTaintedNodes: 10, maxTaintedNodesPercent: 100}}
notifications:
  queueSize: {QUEUE}
  sinks:
  - {{type: webhook, name: broken, url: "http://127.0.0.1:{port}/broken", timeout: 2s, maxAttempts: 50,
      initialBackoff: 5s, maxBackoff: 10s}}
  - {{type: webhook, name: hung, url: "http://127.0.0.1:{port}/hung", timeout: 10m, maxAttempts: 1}}
"""


def test_sinks_that_fail_or_hang_never_delay_evictions_and_every_alert_is_counted(
        tmp_path: Path, figures: Figures) -> None:
    sinks = Sinks()
    server = threading.Thread(target=sinks.serve_forever, daemon=True)
    server.start()
    try:
        with audited_cluster(3) as cluster:
            core, apps = client.CoreV1Api(cluster.api), client.AppsV1Api(cluster.api)
            core.create_namespace({"metadata": {"name": "chaos"}})
            wait_until(lambda: core.list_namespaced_service_account("chaos").items, timeout=30, what="chaos SA")
            cordon(core, OTHERS, True)
            apps.create_namespaced_deployment("chaos", deployment("web", PODS, [SICK, *OTHERS], cpu="10m"))
            wait_running(core, "chaos", "web", PODS)
            cordon(core, OTHERS, False)
            r = start_remediator(tmp_path, cluster.kubeconfig, policy(sinks.port), name="r1",
                                 lease_namespace="chaos")
            try:
                wait_until(lambda: r.metric("nodemedic_leader") == 1, timeout=30, what="r1 leads")
                deepest = {"broken": 0.0, "hung": 0.0}

                def all_evicted() -> bool:
                    for sink, most in list(deepest.items()):
                        deepest[sink] = max(most, r.metric("nodemedic_notification_queue_depth", sink=sink))
                    return r.metric("nodemedic_evictions_total", outcome="evicted") >= PODS

                t0 = time.time()
                set_condition(core, SICK, "KernelDeadlock", "True", reason="TaskHung")
                wait_until(all_evicted, timeout=120, what=f"{PODS} evictions", interval=0.05)
                granted = evictions(remediator_calls(audit_calls(cluster, since=t0)))
                figures("condition set to last eviction", max(c.at for c in granted) - t0, "s")
                # Still true now that every eviction is done: the sinks had not let go yet.
                broken_done = sum(r.metric("nodemedic_notifications_total", sink="broken", result=res)
                                  for res in ("sent", "failed", "rejected"))
                hung_done = sum(r.metric("nodemedic_notifications_total", sink="hung", result=res)
                                for res in ("sent", "failed", "rejected"))
                figures("evictions", len(granted))
                figures("hung sink: requests held open when the evictions were done", sinks.counts["hung"])
                figures("broken sink: 500s answered by then (one alert, retrying)", sinks.counts["broken"])
                assert hung_done == 0 and sinks.counts["hung"] == 1, "an eviction waited for the hung sink"
                assert broken_done == 0, "the broken sink gave up before the evictions were done"

                # The last alerts are handed to the sinks just after their evictions (the Event is posted first).
                # Besides the taint and every eviction, web placed wholly on the sick node's zone is a zone-exposure
                # alert when the remediator starts (and again if its replacements land so again).
                remediations = PODS + 1

                def alerts() -> int:
                    return sum(1 for e in r.log_events()
                               if e.get("event") in ("NodemedicTainted", "NodemedicEvicted", "NodemedicZoneExposure"))

                def books(sink: str) -> tuple[float, float, int]:
                    dropped = r.metric("nodemedic_notifications_total", sink=sink, result="dropped")
                    depth = r.metric("nodemedic_notification_queue_depth", sink=sink)
                    logged = sum(1 for e in r.log_events() if e.get("msg") == "notification dropped, queue full"
                                 and e.get("sink") == sink)
                    return dropped, depth, logged

                for sink in ("broken", "hung"):
                    wait_until(lambda s=sink: (b := books(s)) and b[0] + b[1] + 1 == alerts() and b, timeout=30,
                               what=f"{sink}: every alert queued, in flight or counted as dropped")
                    dropped, depth, logged = books(sink)
                    deepest[sink] = max(deepest[sink], depth)
                    figures(f"{sink}: alerts / dropped / queued / deepest queue",
                            f"{alerts()} / {dropped:g} / {depth:g} / {deepest[sink]:g}")
                    assert deepest[sink] <= QUEUE and depth <= QUEUE
                    assert dropped == logged, f"{sink}: {dropped} dropped, {logged} logged"
                assert sum(1 for e in r.log_events()
                           if e.get("event") in ("NodemedicTainted", "NodemedicEvicted")) == remediations
            finally:
                sinks.release.set()
                r.stop()
    finally:
        sinks.release.set()
        sinks.shutdown()
        sinks.server_close()
