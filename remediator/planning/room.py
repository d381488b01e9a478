"""Room on a node, in requests and pods: what the gate's books promise to arriving pods and free from leaving ones."""

from __future__ import annotations

from collections.abc import Mapping

from remediator.model.records import PodRecord
from remediator.scheduling.nodefit import PODS

Room = dict[str, int]


def add_pod(room: Room, pod: PodRecord, sign: int = 1) -> None:
    """Count `pod` (one pod and its requests) into `room`, or out of it with `sign` -1."""
    room[PODS] = room.get(PODS, 0) + sign
    add(room, pod.requests, sign)


def add(room: Room, other: Mapping[str, int], sign: int = 1) -> None:
    """Count `other` into `room`, or out of it with `sign` -1."""
    for resource, quantity in other.items():
        room[resource] = room.get(resource, 0) + sign * quantity
