"""A real MediaWiki for the tests (Debian's ``mediawiki`` + php on SQLite, ``php -S`` on loopback).

``../shared/tools/mediawiki/setup_wiki.sh`` installs and fills a wiki (~320 pages,
tricky titles, redirects, other namespaces) in about a minute. The filled wiki is
built once per machine into a template directory (under a lock, so parallel test
sessions share it) and each session starts its own copy on its own port.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.servers import free_port

SETUP = Path(__file__).resolve().parents[2] / "shared" / "tools" / "mediawiki" / "setup_wiki.sh"
TEMPLATE = Path(tempfile.gettempdir()) / f"skillgraph-mediawiki-{os.getuid()}"
NPAGES = "300"


@dataclass
class Wiki:
    url: str  # http://127.0.0.1:PORT (no trailing slash)
    data: Path
    manifest: dict[str, Any]

    @property
    def hostport(self) -> str:
        return self.url.removeprefix("http://")




def _setup(data: Path) -> str:
    if not SETUP.exists():
        pytest.skip(f"MediaWiki set-up script absent: {SETUP} (it comes with ../shared/tools)")
    env = {**os.environ, "MW_QUIET": "1"}
    proc = subprocess.run(["bash", str(SETUP), str(free_port()), str(data), NPAGES], capture_output=True, text=True,
                          timeout=900, env=env)
    if proc.returncode != 0:
        pytest.fail(f"setup_wiki.sh failed:\n{proc.stderr[-3000:]}")
    return proc.stdout.strip().splitlines()[-1]


def _template() -> Path:
    with (TEMPLATE.parent / f"{TEMPLATE.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (TEMPLATE / f".imported-{NPAGES}").exists():
            _setup(TEMPLATE)
            subprocess.run(["bash", str(SETUP), "stop", str(TEMPLATE)], capture_output=True, timeout=60)
    return TEMPLATE


def start_wiki(data: Path) -> Wiki:
    """A copy of the filled template wiki in ``data`` (must not exist), started on a free port."""
    template = _template()
    shutil.copytree(template, data, ignore=shutil.ignore_patterns("server.*", "pages.xml"))
    settings = data / "LocalSettings.php"
    settings.write_text(settings.read_text().replace(str(template), str(data)))
    url = _setup(data)
    return Wiki(url, data, json.loads((data / "manifest.json").read_text()))


def stop_wiki(wiki: Wiki) -> None:
    subprocess.run(["bash", str(SETUP), "stop", str(wiki.data)], capture_output=True, timeout=60)


@pytest.fixture(scope="session")
def mediawiki(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Wiki]:
    if not SETUP.exists():  # like the corpus: beside the clone in CI, absent from a user's clone
        pytest.skip(f"MediaWiki set-up script absent: {SETUP} (it comes with ../shared/tools)")
    wiki = start_wiki(tmp_path_factory.mktemp("mediawiki") / "wiki")
    yield wiki
    stop_wiki(wiki)
