"""Session fixtures: real HTTP servers on 127.0.0.1 (OS-chosen ports), one origin per site.

Sites come from ``tests/fixtures/sites/``, the shared corpus (``SKILLGRAPH_TEST_CORPUS``,
default ``../shared/corpus``; tests that need it skip when it is absent) and the real
Python 3.11 documentation (Debian ``python3.11-doc``). Crawls run as real
``scrapy crawl`` subprocesses from the project root.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.servers import Rule, SiteServer, copy_site, gzip_in_place, live_origins
from tests.wiki import mediawiki  # noqa: F401  (session fixture: a real MediaWiki, issue 6)

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
SITES = FIXTURES / "sites"
#: The shared real-world corpus: ``SKILLGRAPH_TEST_CORPUS``, relative paths from the project root.
CORPUS_VARIABLE = "SKILLGRAPH_TEST_CORPUS"
CORPUS = (ROOT / os.environ.get(CORPUS_VARIABLE, "../shared/corpus")).resolve()
PYTHON_DOCS = Path("/usr/share/doc/python3.11/html")

# Tests choose their Redis themselves: a developer's SKILLGRAPH_REDIS_URL (read by skillgraph/settings.py) must not
# make every test crawl distributed.
os.environ.pop("SKILLGRAPH_REDIS_URL", None)

#: Settings every test crawl uses: no politeness delay, no AutoThrottle (the servers are ours).
TEST_SETTINGS = {"DOWNLOAD_DELAY": "0", "AUTOTHROTTLE_ENABLED": "False", "CONCURRENT_REQUESTS_PER_DOMAIN": "16",
                 "LOG_LEVEL": "INFO"}


def corpus_missing_reason() -> str:
    return f"shared corpus absent: {CORPUS_VARIABLE}={CORPUS} (set {CORPUS_VARIABLE} to run these tests)"


#: Marks a test that reads the shared corpus: skipped, with one line, when it is absent.
requires_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=corpus_missing_reason())


def corpus_file(rel: str) -> Path:
    """A file of the shared corpus; skips the test when the corpus is absent (fails if only the file is)."""
    if not CORPUS.is_dir():
        pytest.skip(corpus_missing_reason())
    path = CORPUS / rel
    if not path.exists():
        pytest.fail(f"shared corpus file missing: {path}")
    return path


#: The llms_scoped site's ``docs/llms-full.txt``: a real corpus file, or a repo fixture when the corpus is absent.
SCOPED_LLMS_FULL = (CORPUS / "llms_full/litellm-docs__static_llms-full.txt" if CORPUS.is_dir()
                    else FIXTURES / "mirrors/chakra_ui/llms-full.txt")


def _origin_site(name: str, tmp: Path, gzip_files: tuple[str, ...] = ()) -> tuple[Path, SiteServer]:
    """Copy a fixture site, start its server, then write the origin into its XML files."""
    root = tmp / name
    server = SiteServer(copy_site(SITES / name, root))
    origin = server.url.rstrip("/")
    for xml in root.rglob("*.xml"):
        xml.write_text(xml.read_text().replace("{{ORIGIN}}", origin))
    for rel in gzip_files:
        gzip_in_place(root / rel)
    return root, server


@pytest.fixture(scope="session")
def sites(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, SiteServer]]:
    tmp = tmp_path_factory.mktemp("sites")
    servers: dict[str, SiteServer] = {}
    for name in ("llms_stub", "crawl_site"):
        _, servers[name] = _origin_site(name, tmp)
    root, servers["llms_scoped"] = _origin_site("llms_scoped", tmp)
    (root / "docs" / "llms-full.txt").write_bytes(SCOPED_LLMS_FULL.read_bytes())
    _, servers["sitemap_site"] = _origin_site("sitemap_site", tmp, gzip_files=("maps/pages.xml",))
    _, link = _origin_site("link_header", tmp)
    link.rules["/docs/"] = Rule(headers={"Link": '</docs/ai/index.txt>; rel="llms-txt"'})
    servers["link_header"] = link
    # Every page answers 500: a rebuild against it must fail and keep the old graph.
    broken = tmp / "broken"
    broken.mkdir()
    servers["broken"] = SiteServer(broken, default=Rule(status=500, body=b"Internal Server Error"))
    yield servers
    for server in servers.values():
        server.stop()


@pytest.fixture(scope="session")
def python_docs() -> Iterator[SiteServer]:
    if not (PYTHON_DOCS / "index.html").exists():
        pytest.fail(f"{PYTHON_DOCS} missing: install Debian's python3.11-doc (.ci/run does)")
    server = SiteServer(PYTHON_DOCS)
    yield server
    server.stop()


@pytest.fixture
def slow_docs() -> Iterator[SiteServer]:
    """The real Python docs, each response a little slow, so that an outage or a signal lands mid-crawl."""
    if not (PYTHON_DOCS / "index.html").exists():
        pytest.fail(f"{PYTHON_DOCS} missing: install Debian's python3.11-doc")
    server = SiteServer(PYTHON_DOCS, default=Rule(delay=0.15))
    yield server
    server.stop()


@dataclass
class CrawlResult:
    returncode: int
    graphs: Path
    name: str
    log: str
    stats: dict[str, Any]

    @property
    def graph(self) -> Path:
        return self.graphs / self.name

    @property
    def sources(self) -> dict[str, Any]:
        return json.loads((self.graph / "sources.json").read_text())

    def markdown_files(self) -> list[Path]:
        return sorted(self.graph.glob("*.md"))


_LOOPBACK_ORIGIN = re.compile(r"https?://(127\.0\.0\.1:\d+)")


def load_bench_script(name: str) -> ModuleType:
    """``bench/<name>.py`` as a module (bench scripts are not a package): its functions, tested in process."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_scrapy(args: list[str], cwd: Path = ROOT, timeout: float = 300, env: dict[str, str] | None = None
               ) -> subprocess.CompletedProcess[str]:
    # The SSRF guard is on: allow exactly the running fixture servers and the loopback origins the
    # command names (127.0.0.1:PORT each), unless the test sets SKILLGRAPH_SSRF_ALLOWLIST itself.
    if args and not args[0].startswith("-") and not any(a.startswith("SKILLGRAPH_SSRF_ALLOWLIST=") for a in args):
        named = [m.group(1) for a in args for m in _LOOPBACK_ORIGIN.finditer(a)]
        allow = ",".join(sorted({*live_origins(), *named}))
        args = [args[0], "-s", f"SKILLGRAPH_SSRF_ALLOWLIST={allow}", *args[1:]]
    return subprocess.run([sys.executable, "-m", "scrapy", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


@pytest.fixture
def crawl(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Run ``scrapy crawl SPIDER`` with test settings; graphs go under tmp_path."""

    def run(spider: str, graphs: Path | None = None, settings: dict[str, Any] | None = None,
            timeout: float = 300, **spider_args: str) -> CrawlResult:
        graphs = graphs or tmp_path / "graphs"
        stats_file = tmp_path / f"stats-{len(list(tmp_path.glob('stats-*')))}.json"
        args = ["crawl", spider]
        for key, value in spider_args.items():
            args += ["-a", f"{key}={value}"]
        merged = {**TEST_SETTINGS, "SKILLGRAPH_GRAPHS_DIR": str(graphs), "SKILLGRAPH_STATS_FILE": str(stats_file),
                  # issue 5: disk items and dedup state per test, never in the project root
                  "SKILLGRAPH_ITEMS_DIR": str(tmp_path / "items"),
                  "SKILLGRAPH_STATE_PATH": str(tmp_path / "state.sqlite3"),
                  **(settings or {})}
        for key, value in merged.items():
            args += ["-s", f"{key}={value}"]
        proc = run_scrapy(args, timeout=timeout)
        stats = json.loads(stats_file.read_text()) if stats_file.exists() else {}
        name = spider_args.get("graph") or _graph_name(spider, spider_args)
        return CrawlResult(proc.returncode, graphs, name, proc.stderr, stats)

    return run


def _graph_name(spider: str, args: dict[str, str]) -> str:
    if spider == "docs":
        from skillgraph.urls import default_graph_name

        return default_graph_name(args["url"])
    return spider
