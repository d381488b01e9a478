"""The ports handed to the processes the tests start: never from the kernel's ephemeral range, where any outgoing
connection may take one before the process binds it."""

from __future__ import annotations

import socket

import pytest

from kcp import ports


def test_a_port_is_below_the_ephemeral_range_bindable_and_never_handed_out_twice() -> None:
    start = ports.ephemeral_start()
    chosen = [ports.free_port() for _ in range(300)]

    assert all(ports.LOWEST <= p < start for p in chosen)
    assert len(set(chosen)) == len(chosen)
    with socket.socket() as s:
        s.bind(("127.0.0.1", chosen[-1]))  # free when handed out


def test_a_port_in_use_is_not_handed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as busy:
        busy.bind(("0.0.0.0", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        with socket.socket() as probe:
            probe.bind(("0.0.0.0", 0))
            free = probe.getsockname()[1]
        picks = iter([taken, taken, free])  # the random draws: the busy port twice, then a free one
        monkeypatch.setattr(ports.random, "randrange", lambda low, high: next(picks))

        got = ports.free_port()

    assert got == free
