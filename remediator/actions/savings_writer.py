"""The savings ledger's ConfigMap (remediator/model/savings.py): read once when this replica starts leading, written
when a room opens or closes. The chart lets the remediator get and update only its own ledger (by name) and create
it; `kubectl nodemedic savings` reads the same object with the viewer role. No secret is ever in it."""

from __future__ import annotations

import json
from dataclasses import dataclass

from nodemedic_common.kube_client import Kube
from nodemedic_common.kube_errors import ApiError
from remediator.model.savings import KEY, MAX_LEDGER, Ledger, configmap_path, ledger_of, to_json


@dataclass
class LedgerStore:
    kube: Kube
    namespace: str
    name: str
    resource_version: str = ""  # of the object last read or written; "" while it does not exist

    @property
    def where(self) -> str:
        return f"configmap {self.namespace}/{self.name}"

    async def load(self) -> Ledger:
        """The stored ledger; an empty one when there is none yet. ApiError when unreachable, LedgerError when
        unreadable (the caller keeps what it has and says so; it never overwrites a ledger it could not read)."""
        try:
            doc = await self.kube.request("GET", configmap_path(self.namespace, self.name), limit=MAX_LEDGER + 65536)
        except ApiError as e:
            if e.status == 404:
                self.resource_version = ""
                return Ledger()
            raise
        ledger = ledger_of(doc, self.where)
        meta = doc.get("metadata") if isinstance(doc, dict) else None
        version = meta.get("resourceVersion") if isinstance(meta, dict) else None
        self.resource_version = version if isinstance(version, str) else ""
        return ledger

    async def save(self, ledger: Ledger) -> None:
        """Write the ledger over the version last read or written: a 409 means another writer (a leader before us
        whose write was late) came between; ApiError for the caller to try again next cycle after a new load."""
        body: dict[str, object] = {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": self.name, "namespace": self.namespace,
                         "labels": {"app.kubernetes.io/component": "remediator"},
                         **({"resourceVersion": self.resource_version} if self.resource_version else {})},
            "data": {KEY: json.dumps(to_json(ledger), separators=(",", ":"))}}
        if self.resource_version:
            doc = await self.kube.request("PUT", configmap_path(self.namespace, self.name), body=body)
        else:
            doc = await self.kube.request("POST", configmap_path(self.namespace), body=body)
        meta = doc.get("metadata") if isinstance(doc, dict) else None
        version = meta.get("resourceVersion") if isinstance(meta, dict) else None
        self.resource_version = version if isinstance(version, str) else ""
