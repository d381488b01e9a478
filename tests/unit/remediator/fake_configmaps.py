"""An API server's ConfigMaps as far as the savings ledger uses them: GET, POST (409 when it exists), PUT guarded by
resourceVersion (409 when it moved), each request recorded; `fail` answers the next requests with that status."""

from __future__ import annotations

import copy
from typing import Any

from nodemedic_common.kube_errors import ApiError


class ConfigMaps:
    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}  # path -> object
        self.version = 0
        self.calls: list[tuple[str, str]] = []
        self.fail: list[int] = []

    def put_object(self, path: str, doc: dict[str, Any]) -> None:
        self.version += 1
        doc = copy.deepcopy(doc)
        doc.setdefault("metadata", {})["resourceVersion"] = str(self.version)
        self.objects[path] = doc

    async def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> Any:
        self.calls.append((method, path))
        if self.fail:
            raise ApiError(self.fail.pop(0), method, path, "{}")
        if method == "GET":
            if path not in self.objects:
                raise ApiError(404, method, path, "{}")
            return copy.deepcopy(self.objects[path])
        if method == "POST":
            path = f"{path}/{body['metadata']['name']}"
            if path in self.objects:
                raise ApiError(409, method, path, "{}")
        if method == "PUT" and (path not in self.objects or self.objects[path]["metadata"]["resourceVersion"]
                                != body["metadata"].get("resourceVersion")):
            raise ApiError(409, method, path, "{}")
        self.put_object(path, body)
        return copy.deepcopy(self.objects[path])
