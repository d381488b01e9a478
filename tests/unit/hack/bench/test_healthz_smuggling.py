"""The healthz smuggling bench, run short: no exception escapes a probe, and every probe is answered by its own
request's answer (as many requests as probes: none read from answers sent ahead or left over)."""

from __future__ import annotations

import asyncio
import re

import pytest

from hack.bench.healthz_smuggling import ANSWERS, main


def test_every_hostile_answer_ends_its_probe_as_a_result_of_its_own_request(capsys: pytest.CaptureFixture[str]) -> None:
    runs = 2 * len(ANSWERS)
    asyncio.run(main(runs))
    out = capsys.readouterr().out
    assert "raised" not in out, out
    summary = re.search(r"^(\d+) probes, (\d+) requests: (.*)$", out, re.MULTILINE)
    assert summary is not None, out
    assert (int(summary[1]), int(summary[2])) == (runs, runs), out
    assert "healthy 6" in summary[3], out  # the plain 200, the 199 before a 200, the answer before late bytes
