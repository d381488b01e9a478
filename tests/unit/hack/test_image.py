"""The image's cache key (hack/kcp/image.py): it changes with anything that goes into the image and with nothing
else, so a cached archive is never stale and never rebuilt for nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from hack.kcp import image, paths, versions


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    for name in image.CONTEXT:
        path = root / name
        if "." in name or name == "Dockerfile":
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"{name}\n")
        else:
            (path / "sub").mkdir(parents=True)
            (path / "sub" / "mod.py").write_text("x = 1\n")
    sources = tmp_path / "debian.sources"
    sources.write_text("Types: deb\n")
    monkeypatch.setattr(image, "REPO", root)
    monkeypatch.setattr(image, "APT_SOURCES", (sources,))
    monkeypatch.setenv("NODEMEDIC_CACHE", str(tmp_path / "cache"))
    return root


def test_a_change_to_any_file_the_dockerfile_copies_changes_the_key(repo: Path) -> None:
    before = image.image_key()
    (repo / "agent" / "sub" / "mod.py").write_text("x = 2\n")
    assert image.image_key() != before
    after_code = image.image_key()
    (repo / "requirements.lock").write_text("aiohttp==9\n")
    assert image.image_key() != after_code


def test_bytecode_and_files_outside_the_context_leave_the_key_alone(repo: Path) -> None:
    before = image.image_key()
    (repo / "agent" / "sub" / "__pycache__").mkdir()
    (repo / "agent" / "sub" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"\0")
    (repo / "tests").mkdir()
    (repo / "tests" / "test_x.py").write_text("assert True\n")
    assert image.image_key() == before


def test_the_base_follows_the_mirror_and_the_image_follows_the_base(repo: Path) -> None:
    base, whole = image.base_key(), image.image_key()
    image.APT_SOURCES[0].write_text("Types: deb\nURIs: http://mirror.invalid/debian\n")
    assert image.base_key() != base and image.image_key() != whole


def test_the_archive_is_named_by_the_key_under_the_cache(repo: Path) -> None:
    assert image.archive() == paths.images_dir() / f"nodemedic-{image.image_key()}.tar"
    assert image.reference() == f"localhost/nodemedic:{image.image_key()}"
    assert image.is_missing()
    image.archive().parent.mkdir(parents=True)
    image.archive().write_bytes(b"")
    assert image.is_missing(), "the pause image a real node's sandboxes run is part of it"
    image.pause_archive().write_bytes(b"")
    assert image.is_missing(), "kube-scheduler's image, for the chart's second scheduler, is part of it"
    image.scheduler_archive().write_bytes(b"")
    assert not image.is_missing()
    assert image.scheduler_reference() == f"localhost/kube-scheduler:v{versions.KUBERNETES}"
    assert image.pause_archive().name == f"pause-{image.pause_reference().rsplit(':', 1)[1]}.tar"


def test_without_apt_sources_the_base_cannot_be_made_and_says_so(repo: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    monkeypatch.setattr(image, "APT_SOURCES", (tmp_path / "absent.sources",))
    with pytest.raises(SystemExit, match=r"no apt sources at .*absent\.sources"):
        image.base_key()
