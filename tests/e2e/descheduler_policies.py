"""The policies descheduler v0.36.0 ships, read from its module (the Go module cache `make build` fills): its
examples/, its chart's default `deschedulerPolicy` as helm renders it, and every DeschedulerPolicy printed in its
Markdown. Without the module the tests fail (they never skip)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from hack.kcp import paths, versions

V1ALPHA1 = Path(__file__).resolve().parents[1] / "testdata" / "policies" / "descheduler-v1alpha1"


def module() -> Path:
    cache = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=False,
                           env=dict(os.environ, GOFLAGS="-mod=mod")).stdout.strip()
    where = Path(cache) / f"sigs.k8s.io/descheduler@v{versions.DESCHEDULER}"
    if not (where / "examples").is_dir():
        pytest.fail(f"descheduler v{versions.DESCHEDULER}'s module is not at {where}: run `make build` (it builds "
                    "descheduler from the module proxy); this test never skips", pytrace=False)
    return where


def examples() -> Path:
    return module() / "examples"


def chart_default(work: Path) -> Path:
    """The policy descheduler's chart deploys by default: its ConfigMap's policy.yaml, as helm renders it."""
    helm = paths.binary("helm")
    if not helm.exists():
        pytest.fail(f"helm is not built ({helm} missing): run `make build`; this test never skips", pytrace=False)
    out = subprocess.run([str(helm), "template", "descheduler", str(module() / "charts" / "descheduler")],
                         capture_output=True, text=True, check=True).stdout
    (config,) = [d for d in yaml.safe_load_all(out) if d and d["kind"] == "ConfigMap"]
    work.mkdir(parents=True, exist_ok=True)
    path = work / "chart-default-policy.yaml"
    path.write_text(config["data"]["policy.yaml"])
    return path


def documented() -> dict[str, str]:
    """Every DeschedulerPolicy printed in the module's Markdown: "path:line" (of the block's first line) -> text.
    Not keps/: design proposals, written in syntax that was never released."""
    root = module()
    found: dict[str, str] = {}
    for md in sorted(p for p in root.rglob("*.md") if p.relative_to(root).parts[0] != "keps"):
        text = md.read_text()
        for m in re.finditer(r"^```[^\n]*\n(.*?)^```", text, re.S | re.M):
            if re.search(r'^kind:\s*"?DeschedulerPolicy', m.group(1), re.M):
                found[f"{md.relative_to(root)}:{text[:m.start()].count(chr(10)) + 2}"] = m.group(1)
    return found


# Documented policies that descheduler v0.36.0 itself refuses (test_descheduler_refuses_them_too runs it): nodemedic
# refuses them too, naming the line.
DESCHEDULER_REFUSES = {
    "README.md:229": "a sketch: `- ...` and `[...]` placeholders (yaml: line 50: could not find expected ':')",
    "README.md:992": "PriorityClass \"priorityClassName1\" not found (a placeholder; not even a valid name)",
    "pkg/framework/plugins/example/README.md:47": "plugin Example in pluginConfig not registered (a developer's "
                                                  "sample, not built into descheduler)",
    "pkg/framework/plugins/podlifetime/README.md:116": "plugins.deschedule.enabled lists objects, not names",
    "pkg/framework/plugins/podlifetime/README.md:138": "plugins.deschedule.enabled lists objects, not names",
}
