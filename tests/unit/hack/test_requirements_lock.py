"""requirements.lock (what the image installs) is exactly the runtime closure the tests run with."""

from __future__ import annotations

import difflib

from hack import requirements_lock


def test_the_lock_matches_the_runtime_dependencies_installed_in_the_test_venv() -> None:
    locked, installed = requirements_lock.LOCK.read_text(), requirements_lock.render()
    diff = "\n".join(difflib.unified_diff(locked.splitlines(), installed.splitlines(), "requirements.lock",
                                          "installed in this venv", lineterm="", n=0))
    assert locked == installed, (
        "the tests run with other versions than the image ships. `make setup` installs the lock; if this venv "
        "predates a lock change, `rm .venv/.installed && make setup`. To move to new versions on purpose, install "
        "them and run `.venv/bin/python -m hack.requirements_lock`.\n" + diff)
