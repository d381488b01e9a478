"""Benchmark: every shipped log pattern on adversarial input, Python's backtracking `re` (the agent before issue 25)
against RE2 as the agent runs it now (google-re2, the line capped at MAX_MATCHED_LINE, a multi-line rule's buffer at
MAX_MATCHED_BUFFER).

The patterns: each rule of each shipped NPD monitor (agent/defaults/*.json), anchored at the end as the monitor anchors
them, plus the filesystem check's remount pattern. For each one a matching phrase is derived from the pattern itself
(the simplest string it matches, found by hypothesis), and these inputs are built from it:
  repeat8     the phrase 8 times on one line (ProbeFailureStorm took ~20 s here)
  repeat10k   the phrase repeated to a 10 KiB line
  nearmiss10k the phrase without its last character, repeated to 10 KiB (a match fails at the very end)
  prefix10k   the phrase's first half repeated to 10 KiB
  buffer      for a rule that spans lines: 10 lines of `nearmiss10k` (the buffer the monitor searches)
Each search on `re` runs in a child process, given up after --limit seconds (shown as ">Ns"); RE2 runs here. Prints one
row per pattern: the worst input and its time on each engine, slowest `re` first.

    .venv/bin/python -m hack.bench.patterns [--limit 10] [--repeat 3]
"""

from __future__ import annotations

import argparse
import multiprocessing
import re
import sys
import time
import warnings
from collections import deque
from dataclasses import dataclass

from hypothesis import HealthCheck, find, settings
from hypothesis import strategies as st

from agent.checks import filesystem
from agent.checks.logmonitor import _newest
from agent.npd.logmonitor_config import DEFAULTS_DIR, load
from agent.npd.re2 import bounded
from nodemedic_common.config_errors import ConfigError

KIB = 1 << 10


@dataclass(frozen=True)
class Pattern:
    name: str
    text: str  # as written (RE2 syntax)
    anchored: bool  # the monitor anchors it at the end of the text
    spans_lines: bool
    new: object  # the compiled RE2 pattern the agent uses now


def shipped() -> list[Pattern]:
    out = []
    for path in sorted(DEFAULTS_DIR.glob("*.json")) + sorted((DEFAULTS_DIR / "plugins").glob("*.json")):
        try:
            config = load(path)
        except ConfigError:  # not a log monitor (a custom-plugin monitor): nothing to time
            continue
        out += [Pattern(f"{path.stem}:{r.reason}", r.pattern, True, r.spans_lines, r.regex) for r in config.rules]
    remount = filesystem._REMOUNT_RO
    out.append(Pattern("filesystem:remount", remount.pattern, False, False, remount))  # type: ignore[attr-defined]
    return out


def old_regex(p: Pattern) -> re.Pattern[str]:
    """What the agent compiled before: the shipped patterns use no syntax the old RE2-to-re translation rewrote."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return re.compile(f"(?:{p.text})\\Z" if p.anchored else p.text, re.ASCII)


def phrase(p: Pattern) -> str:
    """The simplest string the pattern matches whole (hypothesis shrinks to it), without newlines at its ends."""
    example: str = find(st.from_regex(old_regex(p), fullmatch=True), lambda _: True,
                        settings=settings(database=None, suppress_health_check=list(HealthCheck)))
    return example.strip("\n") or "x"


def inputs(p: Pattern) -> dict[str, str]:
    one = phrase(p).split("\n")[-1] or "x"  # the last line of a multi-line phrase: what a line repeats
    near = one[:-1] or "x"
    half = one[: max(1, len(one) // 2)]

    def fill(s: str) -> str:
        return (s + " ") * (10 * KIB // (len(s) + 1) + 1)

    out = {"repeat8": " ".join([one] * 8), "repeat10k": fill(one), "nearmiss10k": fill(near), "prefix10k": fill(half)}
    if p.spans_lines:
        out["buffer"] = "\n".join([fill(near)] * 10)
    return out


def time_old(args: tuple[str, bool, str, int]) -> float:
    text, anchored, subject, repeat = args
    regex = re.compile(f"(?:{text})\\Z" if anchored else text, re.ASCII)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        regex.search(subject)
        best = min(best, time.perf_counter() - t0)
    return best


def time_new(p: Pattern, subject: str, repeat: int) -> float:
    """As the monitor searches now: each line capped, a multi-line rule on the buffer's newest lines up to the bound."""
    lines = [bounded(line) for line in subject.split("\n")]
    text = _newest(deque(lines)) if len(lines) > 1 else lines[0]
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        p.new.search(text)  # type: ignore[attr-defined]
        best = min(best, time.perf_counter() - t0)
    return best


def fmt(seconds: float, limit: float) -> str:
    if seconds >= limit:
        return f">{limit:g} s"
    if seconds >= 1:
        return f"{seconds:.1f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.0f} µs"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=float, default=10.0, help="seconds before a `re` search is given up")
    ap.add_argument("--repeat", type=int, default=3, help="searches per input (the best is kept)")
    args = ap.parse_args()
    ctx = multiprocessing.get_context("spawn")
    pool = ctx.Pool(1)
    rows = []
    for p in shipped():
        worst_old, worst_old_input, worst_new, worst_new_input = 0.0, "", 0.0, ""
        for name, subject in inputs(p).items():
            job = pool.apply_async(time_old, ((p.text, p.anchored, subject, args.repeat),))
            try:
                old = job.get(timeout=args.limit)
            except multiprocessing.TimeoutError:
                old = args.limit
                pool.terminate()  # the search cannot be interrupted: the child goes
                pool = ctx.Pool(1)
            new = time_new(p, subject, args.repeat)
            if old >= worst_old:
                worst_old, worst_old_input = old, name
            if new >= worst_new:
                worst_new, worst_new_input = new, name
        rows.append((worst_old, p.name, worst_old_input, worst_new, worst_new_input))
        print(f"  {p.name}: re {fmt(worst_old, args.limit)} ({worst_old_input}), "
              f"RE2 {fmt(worst_new, args.limit)} ({worst_new_input})", file=sys.stderr, flush=True)
    pool.terminate()
    width = max(len(r[1]) for r in rows)
    print(f"{'pattern':<{width}}  {'re (before): worst':>28}  {'RE2 (now): worst':>28}")
    for old, name, old_input, new, new_input in sorted(rows, key=lambda r: (-r[0], r[1])):
        before, now = f"{fmt(old, args.limit)} {old_input}", f"{fmt(new, args.limit)} {new_input}"
        print(f"{name:<{width}}  {before:>28}  {now:>28}")
    slowest_new = max(r[3] for r in rows)
    print(f"\n{len(rows)} patterns; slowest search: re {fmt(max(r[0] for r in rows), args.limit)}, "
          f"RE2 {fmt(slowest_new, args.limit)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
