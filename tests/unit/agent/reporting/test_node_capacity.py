"""The Node's capacity as plain counts: what the gpu check compares the host with."""

from __future__ import annotations

from typing import Any

import pytest

from agent.reporting.node_capacity import NodeCapacity


@pytest.mark.parametrize(("node", "resource", "expected"), [
    ({"status": {"capacity": {"nvidia.com/gpu": "8", "cpu": "96"}}}, "nvidia.com/gpu", 8),
    ({"status": {"capacity": {"cpu": "96"}}}, "nvidia.com/gpu", None),
    ({"status": {"capacity": {"nvidia.com/gpu": "0"}}}, "nvidia.com/gpu", 0),
    ({"status": {"capacity": {"memory": "1Gi"}}}, "memory", None),
    ({"status": {"capacity": {"nvidia.com/gpu": "-1"}}}, "nvidia.com/gpu", None),
    ({"status": {}}, "nvidia.com/gpu", None),
    ("not a node", "nvidia.com/gpu", None),
], ids=["listed", "not-listed", "zero", "not-a-plain-count", "negative", "no-capacity", "not-a-mapping"])
def test_a_resource_counts_only_as_a_plain_whole_number_the_node_lists(node: Any, resource: str,
                                                                        expected: int | None) -> None:
    capacity = NodeCapacity()
    capacity.update(node)
    assert capacity.count(resource) == expected


def test_an_answer_without_capacity_keeps_what_was_seen_before() -> None:
    capacity = NodeCapacity()
    capacity.update({"status": {"capacity": {"nvidia.com/gpu": "8"}}})
    capacity.update({"kind": "Status", "code": 500})
    capacity.update(None)

    assert capacity.count("nvidia.com/gpu") == 8
