"""The few API-server calls `hack/cluster` needs, over plain HTTPS with the admin client certificate.

Kept dependency-free on purpose: the cluster scripts run before (and without) the project's venv.
"""

from __future__ import annotations

import http.client
import json
import ssl
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse


class ApiError(RuntimeError):
    def __init__(self, status: int, method: str, path: str, body: str) -> None:
        super().__init__(f"{method} {path}: HTTP {status}: {body[:500]}")
        self.status = status


@dataclass
class Api:
    server: str  # https://127.0.0.1:PORT
    ca: Path
    cert: Path
    key: Path

    def __post_init__(self) -> None:
        self._ctx = ssl.create_default_context(cafile=str(self.ca))
        self._ctx.load_cert_chain(str(self.cert), str(self.key))
        self._local = threading.local()  # one keep-alive connection per thread

    def _conn(self) -> http.client.HTTPSConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            u = urlparse(self.server)
            conn = http.client.HTTPSConnection(u.hostname or "127.0.0.1", u.port, context=self._ctx, timeout=30)
            self._local.conn = conn
        return conn

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = content_type
        for attempt in (1, 2):  # a kept-alive connection may have been closed by the server
            conn = self._conn()
            try:
                conn.request(method, path, body=data, headers=headers)
                resp = conn.getresponse()
                raw = resp.read().decode()
                break
            except (ConnectionError, http.client.HTTPException, OSError):
                conn.close()
                self._local.conn = None
                if attempt == 2:
                    raise
        if resp.status >= 300:
            raise ApiError(resp.status, method, path, raw)
        return json.loads(raw) if raw else None

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def post(self, path: str, body: Any) -> Any:
        return self.request("POST", path, body)
