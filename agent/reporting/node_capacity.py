"""The Node's capacity as the reporting side last saw it, as plain counts for checks that compare the host with what
the Node promises the scheduler (the gpu check: `nvidia.com/gpu` against the GPUs on the PCI bus).

The data flows the one way the design allows, API -> reporter -> a check's input, and costs no request: the reporter
hands over the Node it already gets back from its GET at start and from every status PATCH (at least once a
heartbeat), so a change of capacity (a device plugin registering fewer devices) reaches the checks within a
heartbeat. A check sees only `count(resource)`.
"""

from __future__ import annotations

from typing import Any


class NodeCapacity:
    def __init__(self) -> None:
        self._capacity: dict[str, str] | None = None  # None until a Node was seen

    def update(self, node: Any) -> None:
        """Take `status.capacity` from a Node object as the API server returned it; anything else is ignored."""
        status = node.get("status") if isinstance(node, dict) else None
        capacity = status.get("capacity") if isinstance(status, dict) else None
        if isinstance(capacity, dict):
            self._capacity = {str(name): str(value) for name, value in capacity.items()}

    def count(self, resource: str) -> int | None:
        """The Node's capacity of `resource` as a whole number. None before the Node was seen, when it does not list
        `resource` or lists something that is not a plain count (extended resources are whole numbers)."""
        value = (self._capacity or {}).get(resource)
        return int(value) if value is not None and value.isdigit() else None
