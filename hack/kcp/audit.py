"""The API server's audit log (opt-in: `hack/cluster up --audit`): who made how many requests.

The policy logs every request at level Metadata (no bodies), once it completes; a watch also logs when its
response starts, so a long-lived watch is counted when it is opened. Used by the benchmarks to count the requests
of clients that export no request metrics of their own (descheduler registers no client-go rest-client metrics).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
"""


def write_policy(path: Path) -> Path:
    path.write_text(POLICY)
    return path


@dataclass(frozen=True)
class Request:
    user_agent: str
    verb: str  # the audit verb: get, list, watch, create, update, patch, delete, ...
    resource: str  # e.g. pods, pods/eviction, nodes ("" for non-resource URLs)
    code: int


def read(path: Path, offset: int = 0) -> tuple[list[Request], int]:
    """Requests logged after byte `offset` (each once), and the offset to read on from next time."""
    out: list[Request] = []
    if not path.exists():
        return out, offset
    with open(path, "rb") as f:
        f.seek(offset)
        data = f.read()
    end = data.rfind(b"\n") + 1  # a line still being written is read next time
    for line in data[:end].splitlines():
        if not line.strip():
            continue
        ev = json.loads(line)
        stage, verb = ev.get("stage"), ev.get("verb", "")
        # A watch is counted when its response starts, anything else when it completes (never twice).
        if (verb == "watch" and stage != "ResponseStarted") or (verb != "watch" and stage != "ResponseComplete"):
            continue
        ref = ev.get("objectRef") or {}
        resource = ref.get("resource", "") + (f"/{ref['subresource']}" if ref.get("subresource") else "")
        code = int((ev.get("responseStatus") or {}).get("code", 0))
        out.append(Request(ev.get("userAgent", ""), verb, resource, code))
    return out, offset + end


def count(requests: list[Request], user_agent_prefix: str) -> Counter[str]:
    """Requests per verb of the clients whose User-Agent starts with `user_agent_prefix`."""
    return Counter(r.verb for r in requests if r.user_agent.startswith(user_agent_prefix))
