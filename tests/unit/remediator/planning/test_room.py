"""Room: a pod counts into a node's room as one pod plus its requests, and out of it with sign -1."""

from __future__ import annotations

from remediator.model.records import PodRecord
from remediator.planning.room import Room, add, add_pod
from remediator.scheduling.nodefit import PODS


def _pod(**requests: int) -> PodRecord:
    return PodRecord(namespace="ns", name="p", uid="uid-p", node_name="n1", requests=requests)


def test_a_pod_counts_one_pod_and_its_requests_into_an_empty_room() -> None:
    room: Room = {}
    add_pod(room, _pod(cpu=500, memory=1024))
    assert room == {PODS: 1, "cpu": 500, "memory": 1024}


def test_a_pod_counted_out_with_sign_minus_one_undoes_counting_it_in() -> None:
    room: Room = {PODS: 3, "cpu": 2000, "memory": 4096}
    pod = _pod(cpu=500, memory=1024)
    add_pod(room, pod)
    add_pod(room, pod, -1)
    assert room == {PODS: 3, "cpu": 2000, "memory": 4096}


def test_counting_out_of_an_empty_room_goes_negative() -> None:
    room: Room = {}
    add_pod(room, _pod(cpu=100), -1)
    assert room == {PODS: -1, "cpu": -100}


def test_add_sums_only_the_resources_given_and_keeps_the_others() -> None:
    room: Room = {"cpu": 1000, "nvidia.com/gpu": 1}
    add(room, {"cpu": 250, "memory": 10})
    add(room, {"cpu": 50}, -1)
    assert room == {"cpu": 1200, "memory": 10, "nvidia.com/gpu": 1}


def test_a_pod_without_requests_counts_as_one_pod_only() -> None:
    room: Room = {}
    add_pod(room, _pod())
    assert room == {PODS: 1}
