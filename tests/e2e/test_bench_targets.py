"""Every `make bench-*` target runs on a fresh clone: each once, at its smallest size, as a user types it.

A benchmark nobody runs rots (issue 43: `make bench-chain` failed on a fresh clone after 9 s, `hack/bench/agent.py`
hiding the `agent` package, and nothing noticed). Each target here is the Makefile's own recipe with `BENCH_ARGS`
appended (argparse keeps the last of a repeated option, so the size given here wins over the recipe's), run with
`make -o build -o setup`: `make test` has built everything before the tests start, and several targets building at
once would race on the cache. The test asserts it exits 0 and prints the line that carries its figures. No figure is
judged: timing belongs to the benchmarks' own runs, not to tests. The targets that take the real node run on the
worker that owns it.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# target -> (its smallest size, a line of its output that carries figures, whether it takes the real node)
SMALLEST: dict[str, tuple[str, str, bool]] = {
    "bench-cluster": ("--nodes 1 --runs 1", r"cluster up, 1 nodes Ready, warm cache: median [0-9.]+s", False),
    "bench-remediator": ("--samples 2", r"taint → first eviction: p50 [0-9]+ ms, .* over 2 samples", False),
    "bench-agent": ("--samples 2 --warmup 2 --window 3", r"RSS after the injections: [0-9.]+ MiB", False),
    "bench-agent-npd": ("--samples 2 --warmup 2 --window 3", r"ratios agent / node-problem-detector: RSS", False),
    "bench-agent-npd-node": ("--seconds 3 --warmup 3", r"RSS \(memory\.stat total_rss\), mean +[0-9.]+", True),
    "bench-healthz": ("--runs 2", r"2 probes, [0-9]+ requests: ", False),
    "bench-plan": ("--nodes 40 --pods 1200 --runs 1 --total-limits 50", r"planning cycle: median [0-9.]+ s over 1 runs",
                   False),
    "bench-steady": ("--nodes 40 --runs 1 --settle 2",
                     r"steady, no changes +median +[0-9.]+ s .*\n.*steady, 12 pods changed +median +[0-9.]+ s .*\n"
                     r".*steady, and 1 node reported +median +[0-9.]+ s", False),
    "bench-affinity": ("--nodes 40", r"zone anti-affinity matching no pod +[0-9.]+ s CPU", False),
    "bench-descheduler": ("--nodes 6 --pods 60 --samples 1 --steady-seconds 3 --steady-cycles 1 --interval 3",
                          r"nodemedic vs descheduler v[0-9.]+ \(dry-run\), 6 nodes", False),
    "bench-chain": ("--runs 1 --strict-runs 0", r"per-run results: ", False),
    "bench-remediator-memory": ("--sizes 10:100,20:300 --cycles 2",
                                r"fitted: peak = [0-9.-]+ MiB \+ [0-9.-]+ MiB per 1,000 pods", False),
    "bench-repair": ("--runs 1 --window 10", r"summary \(machine: .*one run of the real node's fault, 1 runs of each",
                     True),
    "bench-dark": ("--window 10", r"A node gone dark, seconds after", True),
    "bench-stream": ("--hours 3 --hour-seconds 20 --deployments 10 --max-nodes 10",
                     r"node-hours saved by nodemedic: -?[0-9.]+ % \(the article's figure to beat: 17 %\)", False),
}


def makefile_bench_targets() -> list[str]:
    text = (ROOT / "Makefile").read_text()
    return sorted(set(re.findall(r"^(bench-[a-z-]+):", text, re.M)))


def test_every_bench_target_of_the_makefile_is_run_here() -> None:
    assert makefile_bench_targets() == sorted(SMALLEST), "a `make bench-*` target without its smallest size here"


def run_target(target: str) -> str:
    size, figures, _ = SMALLEST[target]
    out = subprocess.run(["make", "--no-print-directory", "-o", "build", "-o", "setup", target, f"BENCH_ARGS={size}"],
                         check=False, cwd=ROOT, capture_output=True, text=True, timeout=900)
    # A benchmark's error can quote a peer's log at length (descheduler's JSON lines): its own lines come first.
    own = "\n".join(line for line in out.stderr.splitlines() if not line.startswith("{"))
    told = (f"`make {target} BENCH_ARGS='{size}'` exit {out.returncode}\n{out.stdout[-4000:]}\n"
            f"its own lines on stderr:\n{own[-4000:]}\nstderr's end:\n{out.stderr[-2000:]}")
    assert out.returncode == 0, told
    assert re.search(figures, out.stdout), f"no line matching {figures!r}: {told}"
    return out.stdout


@pytest.mark.e2e
@pytest.mark.parametrize("target", [t for t, (_, _, real) in SMALLEST.items() if not real])
def test_a_bench_target_runs_at_its_smallest_size(target: str) -> None:
    run_target(target)


@pytest.mark.e2e
@pytest.mark.xdist_group("real_node")
@pytest.mark.parametrize("target", [t for t, (_, _, real) in SMALLEST.items() if real])
def test_a_bench_target_on_the_real_node_runs_at_its_smallest_size(target: str) -> None:
    run_target(target)
