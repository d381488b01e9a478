"""Node conditions as a client sees them through the API server: what the latency benchmarks time."""

from __future__ import annotations

import contextlib
import threading
import time

from kubernetes import client, watch


def has_condition(core: client.CoreV1Api, node: str, condition_type: str) -> bool:
    status = core.read_node_status(node).status
    return status is not None and any(c.type == condition_type for c in status.conditions or [])


class ConditionWatch:
    """The first moment (wall clock) each node's condition was seen True by a watch on the Nodes."""

    def __init__(self, core: client.CoreV1Api) -> None:
        self.core = core
        self.true_seen: dict[tuple[str, str], float] = {}
        threading.Thread(target=self._run, daemon=True).start()

    def first_true(self, node: str, condition_type: str) -> float | None:
        return self.true_seen.get((node, condition_type))

    def _run(self) -> None:
        with contextlib.suppress(Exception):  # ends when the cluster is torn down
            for ev in watch.Watch().stream(self.core.list_node, _request_timeout=3600):
                seen = time.time()
                node: client.V1Node = ev["object"]
                name = node.metadata.name if node.metadata else None
                for c in (node.status.conditions if node.status else None) or []:
                    if c.status == "True" and name:
                        self.true_seen.setdefault((name, c.type), seen)
