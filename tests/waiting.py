"""Waiting for a condition with a deadline, instead of sleeping a fixed time."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(probe: Callable[[], T], *, timeout: float, what: str, interval: float = 0.1) -> T:
    """Call `probe` until it returns something truthy; fail with `what` and the last value at the deadline."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            last = probe()
        except AssertionError as e:  # a probe may assert to explain what it saw
            last = e
        else:
            if last:
                return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}; last: {last!r}")
        time.sleep(interval)


class Moments:
    """The first time each named probe value was truthy, in seconds since `t0`: a test's timeline, printed at its
    end. `mark(what, value)` returns `value`, so it wraps the probe of a `wait_until`."""

    def __init__(self, t0: float) -> None:
        self.t0 = t0
        self.at: dict[str, float] = {}

    def __call__(self, what: str, value: T) -> T:
        if value and what not in self.at:
            self.at[what] = time.monotonic() - self.t0
        return value
