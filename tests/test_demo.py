"""``make demo`` in a fresh copy of the project, with nothing beside it and no Chromium (issue 14).

A user's first command: it must exit 0 and print where the graph is, with no
``../shared`` next to the clone and on a machine without a browser (the render
tier then costs one warning line, not the run). The project's files (those git
tracks or would track) are copied into an empty directory, so nothing of this
checkout (graphs, items, caches) helps; the interpreter is this one (``PY=``),
so no virtualenv is built.

Chromium is hidden for real where the test runs as root (a private mount
namespace binds ``/dev/null`` over the browser, for the ``make`` process
only); elsewhere the browser setting points at a path that does not exist,
which takes the same code path.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from skillgraph.addon import DEFAULTS
from tests.conftest import ROOT

BROWSER = str(DEFAULTS["SKILLGRAPH_RENDER_BROWSER"])
SKIP_PARTS = {".git", ".venv", "graphs", "items", ".scrapy", "__pycache__", ".pytest_cache", ".mypy_cache",
              ".ruff_cache", "store.sqlite3"}


def project_files() -> list[str]:
    """The files a clone would hold (tracked or not ignored), else every file outside build output."""
    try:
        listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                                text=True, check=True).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        listed = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file()]
    return [f for f in listed if not SKIP_PARTS.intersection(Path(f).parts) and (ROOT / f).is_file()]


def without_chromium(command: list[str]) -> tuple[list[str], list[str]]:
    """``command`` run where no browser is found, and the make variables that need."""
    if not os.path.exists(BROWSER):
        return command, []  # this machine has none
    if os.geteuid() == 0 and shutil.which("unshare") and subprocess.run(
            ["unshare", "--mount", "--propagation", "private", "true"], capture_output=True).returncode == 0:
        script = f'mount --bind /dev/null "{BROWSER}" && exec "$@"'
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", *command], []
    return command, [f"DEMO_ARGS=-s SKILLGRAPH_RENDER_BROWSER={ROOT}/no-such-browser"]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_demo_in_an_empty_directory_without_chromium(tmp_path: Path) -> None:
    clone = tmp_path / "empty" / "skillgraph"  # nothing beside it: no ../shared
    for rel in project_files():
        target = clone / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, target)
    make = ["make", "-o", ".venv/.installed", "demo", f"PY={sys.executable}"]
    command, variables = without_chromium(make)
    proc = subprocess.run([*command, *variables], cwd=clone, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    shown = proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.returncode == 0, shown
    assert "graph demo: committed to graphs/demo" in proc.stdout, shown
    assert "Open: graphs/demo/llms.txt" in proc.stdout, shown
    assert (clone / "graphs" / "demo" / "llms.txt").is_file() and (clone / "graphs" / "demo" / "sources.json").is_file()
    assert "Traceback" not in proc.stderr, shown
    if os.path.exists(BROWSER):
        warnings = [line for line in proc.stderr.splitlines() if "Render tier off: no browser" in line]
        assert len(warnings) == 1, shown
