"""The ports handed to the processes the tests start: never from the kernel's ephemeral range, where any outgoing
connection may take one before the process binds it."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest

from hack.kcp import ports


def test_a_port_is_below_the_ephemeral_range_bindable_and_never_handed_out_twice(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(ports, "RESERVED", tmp_path)
    start = ports.ephemeral_start()
    chosen = [ports.free_port() for _ in range(300)]

    assert all(ports.LOWEST <= p < start for p in chosen)
    assert len(set(chosen)) == len(chosen)
    with socket.socket() as s:
        s.bind(("127.0.0.1", chosen[-1]))  # free when handed out


def test_a_port_in_use_is_not_handed_out(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("0.0.0.0", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        with socket.socket() as probe:
            probe.bind(("0.0.0.0", 0))
            free = probe.getsockname()[1]
        picks = iter([taken, taken, free])  # the random draws: the busy port twice, then a free one
        monkeypatch.setattr(ports._draw, "randrange", lambda low, high: next(picks))
        monkeypatch.setattr(ports, "RESERVED", tmp_path)

        got = ports.free_port()

    assert got == free


def test_a_port_reserved_by_another_process_is_not_handed_out_until_the_reservation_is_stale(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(ports, "RESERVED", tmp_path)
    with socket.socket() as probe:
        probe.bind(("0.0.0.0", 0))
        free = probe.getsockname()[1]
    (tmp_path / str(free)).touch()  # another process's fresh reservation
    assert not ports._reserve(free)
    old = time.time() - ports.RESERVATION_AGE - 1
    os.utime(tmp_path / str(free), (old, old))
    assert ports._reserve(free)
    assert not ports._reserve(free)  # now ours, and fresh
