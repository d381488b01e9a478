"""What the benchmarks and the demo share: waiting for a condition with a deadline."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait(pred: Callable[[], T | None], timeout: float, what: str, *, poll: float = 0.01) -> T:
    """`pred()`'s first truthy value, polled every `poll` seconds; TimeoutError naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(poll)
    raise TimeoutError(f"timed out after {timeout:g}s waiting for {what}")

