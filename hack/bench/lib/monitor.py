"""The NPD log monitor the latency benchmarks inject lines for: one permanent condition per line."""

from __future__ import annotations

from collections.abc import Callable


def bench_condition(i: int) -> str:
    return f"Bench{i:02d}"


def bench_monitor(count: int, *, pattern: Callable[[int], str], reason: str, lookback: str) -> dict[str, object]:
    """An NPD kmsg system-log-monitor with `count` permanent conditions Bench00.., condition i set by a line
    matching `pattern(i)`: each injected line makes a fresh False -> True transition, timed on its own."""
    return {
        "plugin": "kmsg", "logPath": "/dev/kmsg", "lookback": lookback, "bufferSize": 10, "source": "bench-monitor",
        "conditions": [{"type": bench_condition(i), "reason": f"{bench_condition(i)}Fine", "message": "fine"}
                       for i in range(count)],
        "rules": [{"type": "permanent", "condition": bench_condition(i), "reason": reason, "pattern": pattern(i)}
                  for i in range(count)],
    }
