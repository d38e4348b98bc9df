"""SIGTERM mid-crawl: no half-written file; a JOBDIR run resumed afterwards completes the graph."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from skillgraph.items import sha256_text
from tests.conftest import ROOT, TEST_SETTINGS
from tests.servers import SiteServer

MAX_PAGES = 16




def crawl_command(site: SiteServer, tmp: Path, stats: Path) -> list[str]:
    settings = {**TEST_SETTINGS, "CONCURRENT_REQUESTS": 2, "CONCURRENT_REQUESTS_PER_DOMAIN": 2, "JOBDIR": tmp / "job",
                "SKILLGRAPH_GRAPHS_DIR": tmp / "graphs", "SKILLGRAPH_ITEMS_DIR": tmp / "items",
                "SKILLGRAPH_STATE_PATH": tmp / "state.sqlite3", "SKILLGRAPH_STATS_FILE": stats,
                "SKILLGRAPH_MAX_PAGES": MAX_PAGES, "SKILLGRAPH_RENDER_ENABLED": False,
                "SKILLGRAPH_SSRF_ALLOWLIST": f"127.0.0.1:{site.port}"}
    args = [sys.executable, "-m", "scrapy", "crawl", "docs", "-a", f"url={site.url}library/index.html",
            "-a", "graph=pydocs"]
    for key, value in settings.items():
        args += ["-s", f"{key}={value}"]
    return args


def leftovers(tmp: Path) -> list[Path]:
    """Temp files of interrupted writes (graph files, sources.json, items, state, stats)."""
    return [p for p in tmp.rglob("*") if p.name.endswith((".tmp", ".link"))]


def page_fetches(site: SiteServer) -> Counter[str]:
    return Counter(path for _, path, _ in site.requests if path.startswith("/library/") and path.endswith(".html"))


def test_sigterm_then_resume_completes_the_graph(slow_docs: SiteServer, tmp_path: Path) -> None:
    stats_file = tmp_path / "stats-1.json"
    items = tmp_path / "items" / "docs"
    proc = subprocess.Popen(crawl_command(slow_docs, tmp_path, stats_file), cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while len(list(items.glob("*.json"))) < 4:
        assert proc.poll() is None and time.monotonic() < deadline, "the crawl ended before it could be stopped"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGTERM)
    _, log = proc.communicate(timeout=120)
    assert proc.returncode == 0, log[-3000:]
    stats = json.loads(stats_file.read_text())
    assert stats["finish_reason"] == "shutdown"
    assert not leftovers(tmp_path), "no half-written file anywhere"
    first_docs = {p.stem: json.loads(p.read_text()) for p in items.glob("*.json")}  # each one parses whole
    assert 4 <= len(first_docs) < MAX_PAGES
    assert not (tmp_path / "graphs" / "pydocs").exists(), "a stopped build is never swapped in"
    failed = json.loads((tmp_path / "graphs" / "pydocs.failed.json").read_text())
    assert failed["finish_reason"] == "shutdown"
    journal = tmp_path / "job" / "skillgraph" / "pages.jsonl"
    journaled = [json.loads(line) for line in journal.read_text().splitlines()]
    assert len(journaled) == stats["skillgraph/graph/pages"] == len(first_docs)

    resumed_stats = tmp_path / "stats-2.json"
    resumed = subprocess.run(crawl_command(slow_docs, tmp_path, resumed_stats), cwd=ROOT, capture_output=True,
                             text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    stats = json.loads(resumed_stats.read_text())
    assert stats["skillgraph/graph/committed"] == 1
    assert stats["skillgraph/resume/replayed"] == len(journaled)
    sources = json.loads((tmp_path / "graphs" / "pydocs" / "sources.json").read_text())
    urls = [p["url"] for p in sources["pages"]]
    assert len(urls) == len(set(urls)) == MAX_PAGES, "the resumed build is whole"
    assert {e["url"] for e in journaled} <= set(urls), "the stopped run's pages are in the resumed graph"
    stored = {d["url"] for d in first_docs.values()} | {json.loads(p.read_text())["url"] for p in items.glob("*.json")}
    for page in sources["pages"]:
        text = (tmp_path / "graphs" / "pydocs" / page["file"]).read_text()
        assert text and page["url"] in stored and page["sha256"] == sha256_text(text)
    start = "/library/index.html"
    twice = {path: n for path, n in page_fetches(slow_docs).items() if n > 1 and path != start}
    assert not twice, f"pages fetched by both runs: {twice}"
    assert "skillgraph/dual_write/disk_written" in stats
    assert stats.get("skillgraph/dedup/unchanged", 0) >= len(journaled), "replayed pages are not written again"
    assert not journal.exists(), "the journal goes once the build is committed"
    assert not leftovers(tmp_path)
