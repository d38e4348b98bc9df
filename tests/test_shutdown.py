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
    assert proc.returncode == 128 + signal.SIGTERM, log[-3000:]
    stats = json.loads(stats_file.read_text())
    assert stats["finish_reason"] == "shutdown"
    assert not leftovers(tmp_path), "no half-written file anywhere"
    first_docs = {p.stem: json.loads(p.read_text()) for p in items.glob("*.json")}  # each one parses whole
    assert 4 <= len(first_docs) < MAX_PAGES
    interrupted = json.loads((tmp_path / "graphs" / "pydocs" / "sources.json").read_text())
    assert interrupted["truncated"]["reason"] == "interrupted", "what was fetched is committed, marked truncated"
    assert len(interrupted["pages"]) == stats["skillgraph/graph/pages"] == len(first_docs)
    journal = tmp_path / "job" / "skillgraph" / "pages.jsonl"
    assert not journal.exists(), "the journal goes once a build is committed"
    journaled = [{"url": p["url"]} for p in interrupted["pages"]]

    resumed_stats = tmp_path / "stats-2.json"
    resumed = subprocess.run(crawl_command(slow_docs, tmp_path, resumed_stats), cwd=ROOT, capture_output=True,
                             text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    stats = json.loads(resumed_stats.read_text())
    assert stats["skillgraph/graph/committed"] == 1
    sources = json.loads((tmp_path / "graphs" / "pydocs" / "sources.json").read_text())
    urls = [p["url"] for p in sources["pages"]]
    # The bound is spent on what this run wrote or carried as it went; a live page it did not reach
    # again (its queued requests came first) is carried at the end, never dropped: up to the first run's pages more.
    assert len(urls) == len(set(urls)) and MAX_PAGES <= len(urls) <= MAX_PAGES + len(journaled)
    assert {e["url"] for e in journaled} <= set(urls), "the stopped run's pages are in the resumed graph"
    stored = {d["url"] for d in first_docs.values()} | {json.loads(p.read_text())["url"] for p in items.glob("*.json")}
    for page in sources["pages"]:
        text = (tmp_path / "graphs" / "pydocs" / page["file"]).read_text()
        assert text and page["url"] in stored and page["sha256"] == sha256_text(text)
    start = "/library/index.html"
    twice = {path: n for path, n in page_fetches(slow_docs).items() if n > 1 and path != start}
    assert not twice, f"pages fetched by both runs: {twice}"
    assert "skillgraph/dual_write/disk_written" in stats
    assert stats.get("skillgraph/graph/carried_over", 0) >= len(journaled), "the first run's pages are carried over"
    assert sources["truncated"] is None or sources["truncated"]["reason"] == "max_pages"
    assert not leftovers(tmp_path)


def library_pages() -> set[str]:
    from tests.conftest import PYTHON_DOCS

    return {p.name for p in (PYTHON_DOCS / "library").glob("*.html")}


def test_sigint_commits_what_was_fetched_and_the_next_run_finishes_it(slow_docs: SiteServer, tmp_path: Path) -> None:
    """Issue 11: no JOBDIR needed. SIGINT commits a truncated graph; the same command then completes it."""
    items = tmp_path / "items" / "docs"

    def command(stats: Path) -> list[str]:
        args = crawl_command(slow_docs, tmp_path, stats)
        drop = {"JOBDIR", "SKILLGRAPH_MAX_PAGES", "CONCURRENT_REQUESTS", "CONCURRENT_REQUESTS_PER_DOMAIN"}
        kept = [a for i, a in enumerate(args) if not (a.split("=", 1)[0] in drop or
                                                       (a == "-s" and args[i + 1].split("=", 1)[0] in drop))]
        return [*kept, "-s", "SKILLGRAPH_MAX_PAGES=0", "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=4"]

    proc = subprocess.Popen(command(tmp_path / "s1.json"), cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 180
    while len(list(items.glob("*.json"))) < 100:
        assert proc.poll() is None and time.monotonic() < deadline, "the crawl ended before it could be stopped"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGINT)
    _, log = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGINT, log[-3000:]
    graph = tmp_path / "graphs" / "pydocs"
    first = json.loads((graph / "sources.json").read_text())
    assert first["truncated"]["reason"] == "interrupted"
    assert first["truncated"]["skipped"] > 0, "the URLs known but not fetched are counted"
    first_pages = {p["url"] for p in first["pages"]}
    assert len(first_pages) >= 100
    assert not leftovers(tmp_path)
    fetched_before = len(slow_docs.requests)

    second = subprocess.run(command(tmp_path / "s2.json"), cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr[-3000:]
    sources = json.loads((graph / "sources.json").read_text())
    assert sources["truncated"] is None, "the scope is done: the flag is dropped"
    names = {p["url"].rsplit("/", 1)[-1] for p in sources["pages"] if "/library/" in p["url"]}
    skipped = {s["url"].rsplit("/", 1)[-1] for s in sources["skipped"] if "/library/" in s["url"]}
    assert library_pages() <= names | skipped, f"unaccounted: {sorted(library_pages() - names - skipped)[:10]}"
    assert first_pages <= {p["url"] for p in sources["pages"]}, "nothing the first run wrote is lost"
    refetched = [path for _, path, _ in slow_docs.requests[fetched_before:]
                 if path.startswith("/library/") and path.endswith(".html")]
    assert len(refetched) <= len(library_pages()) - len(first_pages) + 5, "the second run fetches what was left"


def test_the_crawl_command_leaves_its_heap_to_the_exit(tmp_path: Path) -> None:
    """After the crawl, scrapy crawl freezes what is left: atexit handlers, logs and output still come out whole."""
    log = tmp_path / "log.txt"
    code = ("import atexit, gc, logging, sys\n"
            "from skillgraph.commands.crawl import leave_heap_to_exit\n"
            "logging.basicConfig(filename=sys.argv[1])\n"
            "atexit.register(lambda: print('atexit ran'))\n"
            "leave_heap_to_exit()\n"
            "assert gc.get_freeze_count() > 10_000, gc.get_freeze_count()\n"
            "logging.getLogger('skillgraph.test').warning('written after the freeze')\n"
            "print('done')\n")
    proc = subprocess.run([sys.executable, "-c", code, str(log)], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["done", "atexit", "ran"]
    assert "written after the freeze" in log.read_text()
