"""Notification credentials kept out of the policy (issue 19): a webhook URL read from a file (a mounted Secret)
and an Authorization header from an environment variable reach the sink, and appear in no output channel: the
remediator's logs, the cluster's Events, /metrics, /plan, `plan --json`, `validate` and the webhook payload."""

from __future__ import annotations

import json
import secrets
import subprocess
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from kubernetes import client

from tests.e2e.conftest import LocalCluster
from tests.e2e.remediator_harness import REMEDIATOR, pool_scope, set_condition, start_remediator, taint_keys
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e

TAINT = "nodemedic.io/kernel-deadlock"


class EchoingReceiver:
    """A webhook target that records path, headers and body, and answers its first request with a 500 whose body
    repeats the request line and headers, as some proxies do: the error the remediator logs then holds the secrets
    unless it cuts them out."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], object]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                outer.requests.append((self.path, dict(self.headers), json.loads(self.rfile.read(length))))
                first = len(outer.requests) == 1
                body = f"upstream failed: POST {self.path} {dict(self.headers)}".encode() if first else b"ok"
                self.send_response(500 if first else 200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_sink_url_from_a_secret_file_and_a_header_from_the_environment_never_reach_an_output(
    cluster: LocalCluster, core: client.CoreV1Api, namespace: str, node_pool: Callable[..., list[str]],
    tmp_path: Path, processes: list, monkeypatch: pytest.MonkeyPatch,
) -> None:
    (node,) = node_pool(1)
    url_token, header_token = f"urltoken{secrets.token_hex(12)}", f"headertoken{secrets.token_hex(12)}"
    receiver = EchoingReceiver()
    try:
        secret_dir = tmp_path / "secrets"  # what the chart mounts from a Secret
        secret_dir.mkdir()
        (secret_dir / "webhook-url").write_text(f"{receiver.base}/services/T0/B0/{url_token}\n")
        monkeypatch.setenv("NODEMEDIC_TEST_ALERTS_TOKEN", f"Bearer {header_token}")
        policy = f"""
apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
rules:
- name: kernel-deadlock
  condition: {{type: KernelDeadlock, status: "True", for: 1s}}
  taint: {{key: {TAINT}, value: "true", effect: NoSchedule}}
  evict: true
  recoverAfter: 2s
evictor:
  namespaces: {{include: [{namespace}]}}
safety: {{maxTaintedNodes: 10, maxTaintedNodesPercent: 100}}
{pool_scope([node])}
notifications:
  sinks:
  - type: webhook
    name: ops
    url: {{file: {secret_dir / "webhook-url"}}}
    headers: {{Authorization: {{env: NODEMEDIC_TEST_ALERTS_TOKEN}}}}
    initialBackoff: 100ms
"""
        r = start_remediator(tmp_path, cluster.kubeconfig, policy, name="r", lease_namespace=namespace,
                             extra=["--secrets-dir", str(secret_dir)])
        processes.append(r)
        set_condition(core, node, "KernelDeadlock", "True")
        wait_until(lambda: TAINT in taint_keys(core, node), timeout=30, what="the taint")
        wait_until(lambda: any(isinstance(b, dict) and b.get("kind") == "Tainted" for _, _, b in receiver.requests[1:]),
                   timeout=30, what="the Tainted notification delivered after the sink's first 500")

        # The secrets were used: the request went to the URL from the file, with the header from the environment.
        path, headers, _ = receiver.requests[-1]
        assert path.endswith(url_token) and headers.get("Authorization") == f"Bearer {header_token}", (path, headers)
        wait_until(lambda: "notification attempt failed, retrying" in r.log(), timeout=10,
                   what="the failed first attempt logged (with the echoing error body)")

        policy_file = tmp_path / "r-policy.yaml"
        validate = subprocess.run([*REMEDIATOR, "validate", "--policy", str(policy_file),
                                   "--secrets-dir", str(secret_dir)], capture_output=True,
                                  text=True, timeout=60, check=False)
        assert validate.returncode == 0, validate.stderr
        plan = subprocess.run([*REMEDIATOR, "plan", "--policy", str(policy_file), "--kubeconfig",
                               str(cluster.kubeconfig), "--json", "--secrets-dir", str(secret_dir)],
                              capture_output=True, text=True, timeout=120, check=False)
        assert plan.returncode == 0, plan.stderr
        events = core.list_event_for_all_namespaces()
        channels = {
            "remediator log": r.log(),
            "Events": json.dumps(client.ApiClient().sanitize_for_serialization(events.items)),
            "/metrics": r.metrics(),
            "/plan": json.dumps(r.plan()),
            "plan --json": plan.stdout + plan.stderr,
            "validate": validate.stdout + validate.stderr,
            "webhook payloads": json.dumps([body for _, _, body in receiver.requests]),
        }
        assert any(e.reason == "NodemedicTainted" for e in events.items), "no Event to search"
        for channel, text in channels.items():
            assert text, f"{channel} is empty: nothing was searched"
            for token in (url_token, header_token):
                assert token not in text, f"a secret leaked into {channel}"
        assert "<redacted>" in r.log(), "the echoing error body was logged without its secrets cut out"
    finally:
        receiver.close()
