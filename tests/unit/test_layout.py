"""The layout the README describes ("The boundaries are checked"): the remediator's top level holds only its entry
points, no product module is over 400 lines, and every product module has its mirrored unit test module
(tests/unit/<package>/<folder>/test_<module>.py) except where the README says a place is tested as a whole."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("agent", "remediator", "nodemedic_common")
MAX_LINES = 400


def whole_tested(module: Path) -> bool:
    """The README's two exceptions: the policy's sections (tested through the loader, as a user's file) and each
    strategy's args (read through the policy's strategies and profiles sections)."""
    relative = module.relative_to(ROOT)
    return relative.parts[:2] == ("remediator", "policy") or (
        relative.parts[:2] == ("remediator", "strategies") and relative.name == "args.py")


def product_modules() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py")
                  if p.name not in ("__init__.py", "__main__.py"))


def test_the_remediator_s_top_level_holds_only_its_entry_points() -> None:
    assert sorted(p.name for p in (ROOT / "remediator").glob("*.py")) == ["__init__.py", "__main__.py", "cli.py",
                                                                         "daemon.py"]


def test_no_product_module_is_over_400_lines() -> None:
    long = {str(p.relative_to(ROOT)): n for p in product_modules()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


def test_every_product_module_has_its_mirrored_unit_test_module() -> None:
    missing = [str(p.relative_to(ROOT)) for p in product_modules() if not whole_tested(p)
               and not (ROOT / "tests" / "unit" / p.relative_to(ROOT).parent / f"test_{p.name}").is_file()]
    assert missing == []


def test_the_exceptions_cover_only_what_the_readme_names() -> None:
    excepted = {str(p.relative_to(ROOT).parent) if p.name != "args.py" else "remediator/strategies/*/args.py"
                for p in product_modules() if whole_tested(p)}
    assert excepted == {"remediator/policy", "remediator/strategies/*/args.py"}
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "`remediator/policy/`" in readme and "strategy's `args.py`" in readme
