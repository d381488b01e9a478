"""The Landings (remediator/model/landing.py): written before each eviction attempt of a landed move, deleted
once its replacement is seen or the attempt did not evict. The admission policy pins pods only while one exists."""

from __future__ import annotations

from nodemedic_common.kube_client import Kube
from nodemedic_common.kube_errors import ApiError
from remediator.model.landing import Landing, landings_path


async def open_landing(kube: Kube, namespace: str, landing: Landing) -> None:
    """Create the object; one left by an attempt whose answer was lost is ours already (409 on our own name)."""
    try:
        await kube.request("POST", landings_path(namespace), body=landing.resource(namespace))
    except ApiError as e:
        if e.status != 409:
            raise


async def close_landing(kube: Kube, namespace: str, name: str) -> None:
    """Delete the object: no pod created from now on is pinned. Gone already is closed."""
    try:
        await kube.request("DELETE", f"{landings_path(namespace)}/{name}")
    except ApiError as e:
        if e.status != 404:
            raise


async def left_open(kube: Kube, namespace: str) -> list[str]:
    """The Landings a previous leader left (it stopped between an attempt and the replacement)."""
    doc = await kube.request("GET", landings_path(namespace), params={"limit": "500"})
    items = doc.get("items") if isinstance(doc, dict) else None
    return sorted(str(meta["name"]) for item in items or () if isinstance(item, dict)
                  and isinstance(meta := item.get("metadata"), dict) and isinstance(meta.get("name"), str))
