"""The built-in check registry: one line per check, each naming a module with a Config, a validate and its class."""

from __future__ import annotations

import importlib
from pathlib import Path

import agent.checks as registry

CHECKS = Path(registry.__file__).parent


def test_every_module_with_a_config_and_a_validate_is_registered_once() -> None:
    configured = set()
    for path in sorted(CHECKS.glob("[a-z]*.py")):
        module = importlib.import_module(f"agent.checks.{path.stem}")
        if isinstance(getattr(module, "Config", None), type) and callable(getattr(module, "validate", None)):
            configured.add(path.stem)
    registered = [module for module, _ in registry.REGISTERED.values()]
    assert len(registered) == len(set(registered))
    assert configured == set(registered)


def test_each_entry_builds_the_class_it_names() -> None:
    for name, (module, cls) in registry.REGISTERED.items():
        spec = registry.BUILTIN[name]
        assert spec.build.__name__ == cls and spec.build.__module__ == f"agent.checks.{module}"
        assert spec.config_type.__module__ == f"agent.checks.{module}"
