"""`make test` relies on pytest-xdist's `--dist loadgroup` running the tests of one `xdist_group` on one worker (a
module's cluster, the machine's one real node). With pytest 9 it silently stopped doing so; this runs a small suite
the way hack/test.py does and checks where each grouped test ran."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SUITE = '''
import os
import pytest

pytestmark = pytest.mark.xdist_group("together")


@pytest.mark.parametrize("n", range(8))
def test_grouped(n: int) -> None:
    (Path(os.environ["WHERE"]) / f"grouped-{n}").write_text(os.environ["PYTEST_XDIST_WORKER"])
'''

LOOSE = '''
import os
import pytest


@pytest.mark.parametrize("n", range(8))
def test_loose(n: int) -> None:
    (Path(os.environ["WHERE"]) / f"loose-{n}").write_text(os.environ["PYTEST_XDIST_WORKER"])
'''


def test_the_tests_of_one_xdist_group_run_on_one_worker(tmp_path: Path) -> None:
    suite, where = tmp_path / "suite", tmp_path / "where"
    suite.mkdir()
    where.mkdir()
    (suite / "test_grouped.py").write_text("from pathlib import Path\n" + SUITE)
    (suite / "test_loose.py").write_text("from pathlib import Path\n" + LOOSE)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "3",
                           "--dist", "loadgroup", "--no-loadscope-reorder", "--rootdir", str(suite), str(suite)],
                          capture_output=True, text=True, timeout=120, check=False, cwd=suite,
                          env={**os.environ, "WHERE": str(where)})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    grouped = {p.read_text() for p in where.glob("grouped-*")}
    loose = {p.read_text() for p in where.glob("loose-*")}
    assert len(list(where.glob("grouped-*"))) == 8 and len(grouped) == 1, f"the group ran on workers {grouped}"
    assert len(loose) > 1, "the loose tests should spread over the workers"
