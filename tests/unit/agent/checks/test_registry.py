"""The built-in check registry: one line per check, and `agent/checks/` holds checks only."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import agent.checks as registry

CHECKS = Path(registry.__file__).parent
# Built from node-problem-detector's monitor files (agent/npd), one check per file, not from the registry.
NPD_MONITORS = {"logmonitor", "custom_plugin"}


def test_every_module_of_the_package_is_a_registered_check_or_an_npd_monitor() -> None:
    modules = {path.stem for path in CHECKS.glob("[a-z]*.py")}
    registered = [module for module, _ in registry.REGISTERED.values()]
    assert len(registered) == len(set(registered))
    assert modules == set(registered) | NPD_MONITORS


def test_each_entry_builds_the_class_it_names_under_the_name_it_is_configured_by() -> None:
    for name, (module, cls) in registry.REGISTERED.items():
        spec = registry.BUILTIN[name]
        assert spec.build.__name__ == cls and spec.build.__module__ == f"agent.checks.{module}"
        assert spec.build.name == name  # the check's name is its config name
        assert dataclasses.is_dataclass(spec.config_type) and spec.config_type.__module__ == f"agent.checks.{module}"
