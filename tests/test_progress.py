"""The progress line and the end-of-crawl summary (skillgraph/extensions/progress.py, summary.py; docs/build.md).

Real ``scrapy crawl docs`` subprocesses against the ``crawl_site`` fixture on
127.0.0.1: the summary is read from stdout, the progress lines from the log
(stderr), or from a pseudo-terminal standing for the user's. A slowed server
keeps the crawl running across many progress ticks.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skillgraph.extensions.progress import nearest_bound
from skillgraph.urls import default_graph_name
from tests.conftest import ROOT, SITES, TEST_SETTINGS, run_scrapy
from tests.servers import Rule, SiteServer, copy_site, live_origins

PROGRESS = "[skillgraph.extensions.progress] INFO: Progress of "
FAST_TICKS = {"SKILLGRAPH_PROGRESS_INTERVAL": "0.05"}


@pytest.fixture(scope="module")
def slow_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SiteServer]:
    """crawl_site with every response 0.1 s late: the crawl outlasts many 0.05 s progress ticks."""
    root = copy_site(SITES / "crawl_site", tmp_path_factory.mktemp("progress") / "crawl_site")
    server = SiteServer(root, default=Rule(delay=0.1))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def fast_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SiteServer]:
    root = copy_site(SITES / "crawl_site", tmp_path_factory.mktemp("progress") / "crawl_site")
    server = SiteServer(root)
    yield server
    server.stop()


def crawl_docs(url: str, tmp: Path, **settings: str) -> tuple[int, str, str, Path]:
    """Run ``scrapy crawl docs -a url=URL``; returns exit code, stdout, stderr and the graph's folder."""
    merged = {**TEST_SETTINGS, "SKILLGRAPH_RENDER_ENABLED": "False", "SKILLGRAPH_GRAPHS_DIR": str(tmp / "graphs"),
              "SKILLGRAPH_ITEMS_DIR": str(tmp / "items"), "SKILLGRAPH_STATE_PATH": str(tmp / "state.sqlite3"),
              **settings}
    args = ["crawl", "docs", "-a", f"url={url}"]
    for key, value in merged.items():
        args += ["-s", f"{key}={value}"]
    proc = run_scrapy(args, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr, tmp / "graphs" / default_graph_name(url)


def last_json(stdout: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(stdout.strip().splitlines()[-1])
    return data


def test_json_summary_matches_sources_and_progress_lines_appear(slow_site: SiteServer, tmp_path: Path) -> None:
    url = slow_site.url + "docs/"
    code, out, log, graph = crawl_docs(url, tmp_path, SKILLGRAPH_SUMMARY_FORMAT="json", **FAST_TICKS)
    assert code == 0, log[-3000:]
    summary = last_json(out)
    sources = json.loads((graph / "sources.json").read_text())
    assert summary["outcome"] == "committed" and summary["failure"] is None
    assert summary["graph"] == default_graph_name(url) == sources["name"]
    assert Path(summary["path"]) == graph
    assert summary["pages"] == len(sources["pages"]) > 0
    assert summary["skipped"] == sources["skipped_counts"]
    assert summary["warnings"] == len(sources["warnings"])
    assert summary["truncated"] is None and summary["elapsed_s"] >= 0
    assert summary["tiers"] == dict(Counter(page["tier"] for page in sources["pages"])), summary
    progress = [line for line in log.splitlines() if PROGRESS in line]
    assert progress, log[-3000:]
    fields = ("pages written of", "URLs known", "requests queued", "skipped; tiers: ", "warnings;", "responses",
              "pages/min; nearest bound: ")
    assert all(f"Progress of {summary['graph']}: " in line and all(f in line for f in fields) for line in progress)
    assert "\r" not in log and "\x1b" not in log, "a log that is not a terminal gets plain lines"
    # the crawl strategy is bounded by pages and time: the nearest of the two is named, as a share
    assert any(line.rstrip().endswith("%)") and (" pages (" in line or " s (" in line) for line in progress)


def test_text_summary_names_the_graph_and_progress_can_be_switched_off(slow_site: SiteServer,
                                                                        tmp_path: Path) -> None:
    url = slow_site.url + "docs/"
    code, out, log, graph = crawl_docs(url, tmp_path, SKILLGRAPH_PROGRESS_ENABLED="False", **FAST_TICKS)
    assert code == 0, log[-3000:]
    sources = json.loads((graph / "sources.json").read_text())
    lines = out.strip().splitlines()
    assert lines[0] == f"graph {default_graph_name(url)}: committed to {graph}", out
    assert f"pages {len(sources['pages'])} (" in out and ", skipped " in out
    assert PROGRESS not in log


def test_a_failed_build_says_failed_in_json(fast_site: SiteServer, tmp_path: Path) -> None:
    code, out, log, graph = crawl_docs(fast_site.url + "docs/nowhere/missing.html", tmp_path,
                                       SKILLGRAPH_SUMMARY_FORMAT="json")
    assert code == 1, log[-3000:]
    summary = last_json(out)
    assert summary["outcome"] == "failed" and summary["path"] is None and summary["failure"]
    assert summary["pages"] == 0 and summary["skipped"] == {"http": 1}
    assert not graph.exists()


def test_summary_none_prints_nothing(fast_site: SiteServer, tmp_path: Path) -> None:
    code, out, log, _ = crawl_docs(fast_site.url + "docs/nowhere/missing.html", tmp_path,
                                   SKILLGRAPH_SUMMARY_FORMAT="none")
    assert code == 1, log[-3000:]
    assert out == ""


def test_the_summary_reaches_stdout_at_log_level_warning(slow_site: SiteServer, tmp_path: Path) -> None:
    """At ``-L WARNING`` nothing of the log shows, yet stdout says where the graph is and what it holds."""
    url = slow_site.url + "docs/"
    code, out, log, graph = crawl_docs(url, tmp_path, LOG_LEVEL="WARNING", **FAST_TICKS)
    assert code == 0, log[-3000:]
    sources = json.loads((graph / "sources.json").read_text())
    lines = out.splitlines()
    assert lines[0] == f"graph {default_graph_name(url)}: committed to {graph}", out
    tiers = Counter(page["tier"] for page in sources["pages"])
    assert lines[1].startswith(f"  pages {len(sources['pages'])} (" + ", ".join(f"{t} {n}" for t, n in tiers.items())
                               + "), skipped "), out
    assert "  not truncated" in lines and lines[-1].startswith("  warnings "), out
    assert PROGRESS not in log and "INFO" not in log


def run_on_terminal(args: list[str]) -> tuple[int, str, str]:
    """``scrapy ARGS`` with stderr on a pseudo-terminal (as a user's shell runs it): exit code, stdout, terminal."""
    allow = ",".join(live_origins())
    main, side = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "scrapy", args[0], "-s", f"SKILLGRAPH_SSRF_ALLOWLIST={allow}",
                             *args[1:]], cwd=ROOT, stdout=subprocess.PIPE, stderr=side, text=True)
    os.close(side)
    chunks: list[bytes] = []

    def drain() -> None:  # until the child's end of the terminal closes (EIO on Linux)
        while True:
            try:
                data = os.read(main, 65536)
            except OSError:
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    out, _ = proc.communicate(timeout=120)
    reader.join(10)
    os.close(main)
    return proc.returncode, out, b"".join(chunks).decode("utf-8", "replace")


def test_on_a_terminal_one_line_rewrites_itself_whatever_the_log_level(slow_site: SiteServer, tmp_path: Path) -> None:
    url = slow_site.url + "docs/"
    args = ["crawl", "docs", "-a", f"url={url}", "-L", "WARNING"]
    for key, value in {**TEST_SETTINGS, "LOG_LEVEL": "WARNING", "SKILLGRAPH_RENDER_ENABLED": "False",
                       "SKILLGRAPH_GRAPHS_DIR": str(tmp_path / "graphs"),
                       "SKILLGRAPH_ITEMS_DIR": str(tmp_path / "items"),
                       "SKILLGRAPH_STATE_PATH": str(tmp_path / "state.sqlite3"), **FAST_TICKS}.items():
        args += ["-s", f"{key}={value}"]
    code, out, terminal = run_on_terminal(args)
    assert code == 0, terminal[-3000:]
    name = default_graph_name(url)
    assert out.startswith(f"graph {name}: committed to "), out
    updates = terminal.split("\r")
    shown = [u for u in updates if u.startswith(f"Progress of {name}: ")]
    assert len(shown) >= 2, terminal[-3000:]
    assert all(u.endswith("\x1b[K") and "\n" not in u for u in shown), "each update rewrites the one line"
    assert "nearest bound: " in shown[-1] or shown[-1].endswith("…\x1b[K")
    assert terminal.endswith("\r\x1b[K"), "the line is cleared at the end: the summary stands alone"
    assert "[skillgraph.extensions.progress]" not in terminal, "not a log line on a terminal"


@pytest.mark.parametrize(("pages", "max_pages", "elapsed", "timeout", "expected"), [
    (120, 400, 30.0, 240.0, "120/400 pages (30%)"),
    (20, 400, 200.0, 240.0, "200/240 s (83%)"),
    (20, None, 10.0, 240.0, "10/240 s (4%)"),
    (20, 400, 10.0, 0.0, "20/400 pages (5%)"),
    (20, None, 10.0, 0.0, "no bound"),
])
def test_nearest_bound(pages: int, max_pages: int | None, elapsed: float, timeout: float, expected: str) -> None:
    assert nearest_bound(pages, max_pages, elapsed, timeout) == expected
