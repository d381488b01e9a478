"""The landing ConfigMaps (remediator/model/landing.py): written before each eviction attempt of a landed move, deleted
once its replacement is seen or the attempt did not evict. The admission policy pins pods only while one exists."""

from __future__ import annotations

from nodemedic_common.kube_client import Kube
from nodemedic_common.kube_errors import ApiError
from remediator.model.landing import LANDING_LABEL, Landing


async def open_landing(kube: Kube, namespace: str, landing: Landing) -> None:
    """Create the ConfigMap; one left by an attempt whose answer was lost is ours already (409 on our own name)."""
    try:
        await kube.request("POST", f"/api/v1/namespaces/{namespace}/configmaps", body=landing.config_map(namespace))
    except ApiError as e:
        if e.status != 409:
            raise


async def close_landing(kube: Kube, namespace: str, name: str) -> None:
    """Delete the ConfigMap: no pod created from now on is pinned. Gone already is closed."""
    try:
        await kube.request("DELETE", f"/api/v1/namespaces/{namespace}/configmaps/{name}")
    except ApiError as e:
        if e.status != 404:
            raise


async def left_open(kube: Kube, namespace: str) -> list[str]:
    """The landing ConfigMaps a previous leader left (it stopped between an attempt and the replacement)."""
    doc = await kube.request("GET", f"/api/v1/namespaces/{namespace}/configmaps",
                             params={"labelSelector": LANDING_LABEL, "limit": "500"})
    items = doc.get("items") if isinstance(doc, dict) else None
    return sorted(str(meta["name"]) for item in items or () if isinstance(item, dict)
                  and isinstance(meta := item.get("metadata"), dict) and isinstance(meta.get("name"), str))
