"""hack/package.py without helm: the release's version check and the packaged chart's default image. Packaging
with the pinned helm, and actionlint on the workflows: tests/e2e/test_release.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from hack import package  # what `make package` and the release workflow run


def test_the_chart_its_app_version_and_the_python_package_carry_one_version() -> None:
    version = package.chart_field("version")
    assert package.check_tag(f"v{version}") == []
    assert package.check_tag(f"refs/tags/v{version}") == []


@pytest.mark.parametrize(("tag", "wrong"), [
    ("v9.9.9", "9.9.9"),
    ("v0.1", "0.1"),
], ids=["another-version", "a-shorter-version"])
def test_a_tag_of_another_version_stops_the_release_naming_each_file(tag: str, wrong: str) -> None:
    errors = package.check_tag(tag)
    assert len(errors) == 3
    for where, error in zip(["Chart.yaml version", "Chart.yaml appVersion", "pyproject.toml project.version"],
                            errors, strict=True):
        assert error.startswith(where) and error.endswith(f"the tag {tag} says {wrong}"), error


def test_a_tag_without_its_v_stops_the_release() -> None:
    assert package.check_tag(package.chart_field("version")) == [
        f"tag {package.chart_field('version')}: must be v<version>"]


def test_the_image_repository_is_set_and_every_other_value_kept(tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text((package.CHART / "values.yaml").read_text())
    package.set_image_repository(values, "ghcr.io/example/nodemedic")
    before = yaml.safe_load((package.CHART / "values.yaml").read_text())
    after = yaml.safe_load(values.read_text())
    assert after["image"]["repository"] == "ghcr.io/example/nodemedic"
    before["image"]["repository"] = after["image"]["repository"]
    assert after == before


def test_values_without_an_image_repository_are_refused(tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text("image:\n  tag: ''\nremediator:\n  repository: other\n")
    with pytest.raises(SystemExit, match="no `repository:` line in its top-level `image:` block"):
        package.set_image_repository(values, "ghcr.io/example/nodemedic")
    assert values.read_text() == "image:\n  tag: ''\nremediator:\n  repository: other\n"


def test_the_image_archive_is_refused_with_the_build_command_when_not_built(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NODEMEDIC_CACHE", str(tmp_path / "empty-cache"))
    with pytest.raises(SystemExit, match=r"hack/cluster build --only debian --only image"):
        package.package_image(tmp_path / "dist")
    assert not (tmp_path / "dist").exists()
