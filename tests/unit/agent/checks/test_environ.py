"""Huge process environments, from fixture /proc/<pid>."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

from agent.bounds import field_problems
from agent.checks import environ
from agent.host import HostRoot

NOW = dt.datetime(2025, 5, 1, 12, 0, tzinfo=dt.UTC)


def process(root: Path, pid: int, comm: str, variables: int, start: int = 1000) -> None:
    d = root / "proc" / str(pid)
    d.mkdir(parents=True, exist_ok=True)
    (d / "environ").write_bytes(b"".join(f"SVC_{i}_SERVICE_HOST=10.0.0.{i % 250}\0".encode() for i in range(variables)))
    rest = " ".join(["0"] * 12)  # fields 10..21, so the start time is field 22
    (d / "stat").write_text(f"{pid} ({comm}) S 1 {pid} {pid} 0 -1 4194560 {rest} {start} 0 0\n")


def test_a_process_with_too_many_variables_is_reported_once(tmp_path: Path) -> None:
    process(tmp_path, 10, "nginx", 1500)
    process(tmp_path, 11, "sh", 20)
    check = environ.EnvironCheck(environ.Config(max_variables=1000), HostRoot(tmp_path))

    first = asyncio.run(check.observe(NOW))
    again = asyncio.run(check.observe(NOW))
    process(tmp_path, 10, "java", 1500, start=2000)  # the pid reused by another process
    reused = asyncio.run(check.observe(NOW))

    assert [e.message.split(":")[0] for e in first.events] == [
        "process 10 (nginx) has 1500 environment variables (threshold 1000)"]
    assert again.events == ()
    assert [e.reason for e in reused.events] == [environ.EVENT]


def test_validation_names_the_bad_fields() -> None:
    assert [str(p) for p in field_problems(environ.Config(max_variables=0))] == [
        "maxVariables: must be at least 1, got 0"]
