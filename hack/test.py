"""`make test`: build what the tests need, then lint and every test side by side; one table at the end.

After the build (each control-plane component built, or found cached), three things run at once:
- lint: ruff, the import contracts, mypy, one after the other;
- the long lane: the tests marked `long_running` (the ten-minute flapping chaos scenario), one process of its own,
  so no test waits queued behind it on a worker;
- the parallel lane: every other test, unit and end to end in one pytest-xdist session, the longest first by the
  times this script recorded last run (tests/ordering.py). Unit tests are CPU-bound and end-to-end tests mostly
  wait on control planes, so mixing them keeps the cores busy. Each worker runs its
  own control plane (the e2e session fixture); a test that disrupts a cluster starts one of its own
  (`private_cluster`, chaos's `audited_cluster`); the tests of a module that share a module-scoped cluster run on
  one worker (`@pytest.mark.xdist_group`).
The table lists seconds per stage, each suite's summed test time, and the slowest tests, so anyone sees where the
time goes; then, for each failed test, the lines of its failure that say why (the assertion's `E` lines, the first
and last of many), so the end of a long CI log is enough to start from; the last line counts every test ("tests: N
passed, N failed").
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from hack.kcp import build
from tests import ordering

ROOT = Path(__file__).resolve().parents[1]

BIN = ROOT / ".venv" / "bin"
PYTEST = [str(BIN / "python"), "-m", "pytest", "tests"]
LINT = (("lint ruff", [str(BIN / "ruff"), "check", "."]),
        ("lint import contracts", [str(BIN / "lint-imports")]),
        ("lint mypy", [str(BIN / "mypy")]))
SLOWEST = 15
NO_TESTS = 5  # pytest's exit code when the selection is empty
WHY_LINES = 30  # per failed test, at the end of the run
WHY_WIDTH = 300  # characters per line of it
PROGRESS = re.compile(r"\[\s*\d+%\]")


@dataclass
class Stage:
    name: str
    seconds: float
    outcome: str  # "ok", "cached", "built, peak N MiB", "failed", "no tests"


@dataclass
class Suite:
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    seconds: float = 0.0
    cases: list[tuple[float, str]] = field(default_factory=list)  # (seconds incl. setup and teardown, test id)
    failures: list[tuple[str, list[str]]] = field(default_factory=list)  # (test id, the lines that say why)


def say(msg: str) -> None:
    print(f"[test] {msg}", flush=True)


@dataclass
class Lane:
    """A command started in the background, its output to a file (printed when it ends, so lanes never interleave)."""

    name: str
    cmds: list[tuple[str, list[str]]]  # run one after another; the lane stops at the first failure
    log: Path
    no_tests_ok: bool = False  # a test lane whose selection is empty (pytest's exit 5) has not failed
    stages: list[Stage] = field(default_factory=list)
    proc: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    index: int = 0

    def start_next(self) -> None:
        name, cmd = self.cmds[self.index]
        say(f"{name}: {' '.join(cmd)}")
        self.started = time.monotonic()
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)

    def poll(self) -> bool:
        """True once the lane has ended."""
        assert self.proc is not None
        rc = self.proc.poll()
        if rc is None:
            return False
        name = self.cmds[self.index][0]
        outcome = "ok" if rc == 0 else "no tests" if rc == NO_TESTS and self.no_tests_ok else "failed"
        self.stages.append(Stage(name, time.monotonic() - self.started, outcome))
        self.index += 1
        if outcome == "ok" and self.index < len(self.cmds):
            self.start_next()
            return False
        say(f"{self.name} ended ({'ok' if self.ok else 'failed'}); its output:")
        sys.stdout.write(self.log.read_text(errors="replace"))
        sys.stdout.flush()
        return True

    def progress(self) -> str:
        """pytest's last progress mark ("45%") in the lane's output, or the step it is at."""
        text = self.log.read_bytes()[-4096:].decode(errors="replace")
        marks: list[str] = PROGRESS.findall(text)
        if marks:
            return marks[-1].strip("[] ")
        return self.cmds[self.index][0] if len(self.cmds) > 1 else "started"

    @property
    def ok(self) -> bool:
        return len(self.stages) == len(self.cmds) and all(s.outcome != "failed" for s in self.stages)


def run_lanes(lanes: list[Lane], *, progress_every: float = 60.0) -> None:
    t0 = time.monotonic()
    for lane in lanes:
        lane.start_next()
    running = list(lanes)
    next_progress = t0 + progress_every
    while running:
        time.sleep(0.5)
        running = [lane for lane in running if not lane.poll()]
        if running and time.monotonic() >= next_progress:
            next_progress += progress_every
            states = "; ".join(f"{lane.name} ({lane.progress()})" for lane in running)
            say(f"{(time.monotonic() - t0) / 60:.0f} min, running: {states}")


def read_junit(path: Path, suites: dict[str, Suite]) -> None:
    if not path.exists():
        return
    for case in ET.parse(path).getroot().iter("testcase"):
        classname = case.get("classname", "")
        suite = suites["e2e" if classname.startswith("tests.e2e.") else "unit"]
        seconds = float(case.get("time") or 0.0)
        suite.cases.append((seconds, f"{classname}::{case.get('name', '')}"))
        suite.seconds += seconds
        kinds = {child.tag for child in case}
        if kinds & {"failure", "error"}:
            suite.failed += 1
            failure = next(child for child in case if child.tag in ("failure", "error"))
            suite.failures.append((f"{classname}::{case.get('name', '')}", why(failure.text or "")))
        elif "skipped" in kinds:
            suite.skipped += 1
        else:
            suite.passed += 1


def why(report: str) -> list[str]:
    """The lines of a pytest failure report that say why: its `E` lines and the `file:line: Error` one after them
    (the whole report's lines when it has none); of many, the first and the last WHY_LINES / 2 (an assertion's message
    starts with what failed, a long quoted log may follow), each cut to WHY_WIDTH."""
    lines = report.splitlines()
    said = [line for line in lines if line.startswith("E ") or re.match(r"^[\w/.-]+\.py:\d+: \w+", line)] or lines
    if len(said) > WHY_LINES:
        half = WHY_LINES // 2
        said = [*said[:half], f"... {len(said) - 2 * half} lines ...", *said[-half:]]
    return [line[:WHY_WIDTH] for line in said]


def print_failures(suites: dict[str, Suite]) -> None:
    for suite in suites.values():
        for test_id, lines in suite.failures:
            print(f"failed: {test_id}")
            for line in lines:
                print(f"    {line}")
    print()


def print_table(stages: list[Stage], suites: dict[str, Suite], wall: float) -> None:
    print()
    print(f"{'stage':<44} {'seconds':>8}  outcome")
    for s in stages:
        print(f"{s.name:<44} {s.seconds:>8.1f}  {s.outcome}")
    for name, suite in suites.items():
        what = f"{name} tests: {suite.passed + suite.failed + suite.skipped}, time summed over the workers"
        print(f"{what:<44} {suite.seconds:>8.1f}  {suite.passed} passed, {suite.failed} failed")
    print(f"{'total (wall)':<44} {wall:>8.1f}")
    print()
    print(f"slowest {SLOWEST} tests (seconds, setup and teardown included)")
    cases = [c for suite in suites.values() for c in suite.cases]
    for seconds, test_id in sorted(cases, reverse=True)[:SLOWEST]:
        print(f"{seconds:>8.1f}  {test_id}")
    print()


def main() -> int:
    ap = argparse.ArgumentParser(prog="python -m hack.test", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, required=True, help="pytest-xdist workers of the parallel lane")
    ap.add_argument("pytest_args", nargs="*", help="more pytest arguments for both test lanes (e.g. -k NAME)")
    args = ap.parse_args()
    t0 = time.monotonic()
    stages: list[Stage] = []
    suites = {"unit": Suite(), "e2e": Suite()}
    try:
        for r in build.build():
            outcome = f"built, peak {r.peak_tree_rss_mib:.0f} MiB" if r.built else "cached"
            stages.append(Stage(f"build {r.component}", r.seconds, outcome))
    except SystemExit as e:  # the build names the failed command and its output; no test could run without it
        print(e, file=sys.stderr)
        stages.append(Stage("build", time.monotonic() - t0, "failed"))
        print_table(stages, suites, time.monotonic() - t0)
        return 1
    with tempfile.TemporaryDirectory(prefix="nodemedic-test-") as tmp:
        out = Path(tmp)
        long_lane = [*PYTEST, "-m", "long_running", f"--junitxml={out / 'long.xml'}", *args.pytest_args]
        # Units of work in collection order, which tests/ordering.py makes longest first (xdist would reorder
        # them by their number of tests).
        parallel = [*PYTEST, "-m", "not long_running", "-n", str(args.workers), "--dist", "loadgroup",
                    "--no-loadscope-reorder", f"--junitxml={out / 'parallel.xml'}", *args.pytest_args]
        lanes = [Lane("lint", [(n, c) for n, c in LINT], out / "lint.log"),
                 Lane("long lane", [("tests: long lane (1 process)", long_lane)], out / "long.log",
                      no_tests_ok=True),
                 Lane("parallel lane", [(f"tests: parallel lane ({args.workers} workers)", parallel)],
                      out / "parallel.log", no_tests_ok=True)]
        run_lanes(lanes)
        for lane in lanes:
            stages += lane.stages
        read_junit(out / "long.xml", suites)
        read_junit(out / "parallel.xml", suites)
        ordering.record([out / "long.xml", out / "parallel.xml"])
    print_table(stages, suites, time.monotonic() - t0)
    print_failures(suites)
    passed = sum(s.passed for s in suites.values())
    failed = sum(s.failed for s in suites.values())
    skipped = sum(s.skipped for s in suites.values())
    print(f"tests: {passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    return 0 if all(lane.ok for lane in lanes) and passed + failed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
