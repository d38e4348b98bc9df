"""The progress line and the end-of-crawl summary (skillgraph/extensions/progress.py, docs/build.md).

Real ``scrapy crawl docs`` subprocesses against the ``crawl_site`` fixture on
127.0.0.1: the summary is read from stdout, the progress lines from the log
(stderr). A slowed server keeps the crawl running across many progress ticks.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skillgraph.urls import default_graph_name
from tests.conftest import SITES, TEST_SETTINGS, run_scrapy
from tests.servers import Rule, SiteServer, copy_site

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
    progress = [line for line in log.splitlines() if PROGRESS in line]
    assert progress, log[-3000:]
    assert all(f"Progress of {summary['graph']}: " in line and "pages written" in line and "requests queued" in line
               and "responses" in line and "pages/min" in line for line in progress)


def test_text_summary_names_the_graph_and_progress_can_be_switched_off(slow_site: SiteServer,
                                                                        tmp_path: Path) -> None:
    url = slow_site.url + "docs/"
    code, out, log, graph = crawl_docs(url, tmp_path, SKILLGRAPH_PROGRESS_ENABLED="False", **FAST_TICKS)
    assert code == 0, log[-3000:]
    sources = json.loads((graph / "sources.json").read_text())
    lines = out.strip().splitlines()
    assert lines[0] == f"graph {default_graph_name(url)}: committed to {graph}", out
    assert f"pages {len(sources['pages'])}, skipped " in out
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
