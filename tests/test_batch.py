"""``scrapy batch``: llms sites first, web crawls last, each bounded; an overrun is killed as a group.

Real sites on loopback: two llms mirrors (llms-full, llms-index), a slow sitemap
mirror (every answer delayed) and a hanging one (every answer held for two
minutes), all built by real ``scrapy crawl`` subprocesses under small bounds.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest

from skillgraph.batch.plan import Site, SiteResult, ordered
from skillgraph.batch.report import table
from tests.conftest import run_scrapy
from tests.servers import Rule, SiteServer
from tests.test_spiders import SETTINGS, serve_mirror

CRAWL_TIMEOUT, GRACE, KILL_WAIT, DETECT_TIMEOUT, JOBS = 5, 10, 3, 5, 2


def test_order_puts_llms_sites_first_and_keeps_the_given_order() -> None:
    sites = [Site("a", "u", strategy="crawl"), Site("b", "u", strategy=None), Site("c", "u", strategy="sitemap"),
             Site("d", "u", strategy="llms-index"), Site("e", "u", strategy="llms-full"),
             Site("f", "u", strategy="crawl")]
    assert [s.name for s in ordered(sites)] == ["e", "d", "c", "a", "f", "b"]
    assert not Site("x", "u", strategy="llms-full").is_web_crawl and Site("y", "u").is_web_crawl


def test_table_lines_up() -> None:
    lines = table([SiteResult("k8s_docs", "sitemap", "ok", 12, 3.25),
                   SiteResult("rust_book", None, "killed", 0, 15.0, reason="killed after 15s")]).splitlines()
    assert lines[0].split() == ["site", "strategy", "status", "pages", "elapsed", "reason"]
    assert lines[2].split() == ["k8s_docs", "sitemap", "ok", "12", "3.2s"]
    assert lines[3].split()[:5] == ["rust_book", "?", "killed", "0", "15.0s"]


@pytest.fixture(scope="module")
def batch_sites(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("batch-sites")
    servers = {name: serve_mirror(name, tmp / name) for name in ("chakra_ui", "langchain", "k8s_docs", "rust_book")}
    servers["k8s_docs"].default = Rule(delay=0.3)  # slow: every answer, sitemaps included
    hanging = serve_mirror("rust_book", tmp / "hanging")
    hanging.default = Rule(delay=120)  # accepts, then holds every answer past any bound
    servers["hanging"] = hanging
    yield servers
    for server in servers.values():
        server.stop()



def _settings(graphs: Path, tmp: Path) -> list[str]:
    merged = {**SETTINGS, "SKILLGRAPH_GRAPHS_DIR": graphs, "SKILLGRAPH_ITEMS_DIR": tmp / "items",
              "SKILLGRAPH_STATE_PATH": tmp / "state.sqlite3"}
    return [arg for key, value in merged.items() for arg in ("-s", f"{key}={value}")]


def test_batch_runs_llms_first_and_kills_the_hanging_site(batch_sites: dict[str, SiteServer], tmp_path: Path
                                                          ) -> None:
    graphs = tmp_path / "graphs"
    # The hanging site had a good build once: the batch must leave it in place.
    first = run_scrapy(["batch", "rust_book", "--base-url", f"rust_book={batch_sites['rust_book'].url}",
                        *_settings(graphs, tmp_path)], timeout=180)
    assert first.returncode == 0, first.stdout + first.stderr[-3000:]
    before_target = os.readlink(graphs / "rust_book")
    before = {p.name: p.read_text() for p in (graphs / "rust_book").iterdir()}
    assert len([n for n in before if n.endswith(".md")]) == 3

    args = ["batch", "rust_book", "k8s_docs", "langchain", "chakra_ui", "--jobs", str(JOBS), "--grace", str(GRACE),
            "--base-url", f"rust_book={batch_sites['hanging'].url}",
            "--base-url", f"k8s_docs={batch_sites['k8s_docs'].url}",
            "--base-url", f"langchain={batch_sites['langchain'].url}",
            "--base-url", f"chakra_ui={batch_sites['chakra_ui'].url}",
            "-s", f"SKILLGRAPH_CRAWL_TIMEOUT={CRAWL_TIMEOUT}", "-s", f"SKILLGRAPH_BATCH_KILL_WAIT={KILL_WAIT}",
            # A crawl ends itself at its timeout plus this grace (bounded downloads); a grace past the batch's
            # wall bound makes the hanging site outlive it, so the batch's kill (the backstop) is what ends it.
            "-s", f"SKILLGRAPH_CRAWL_TIMEOUT_GRACE={GRACE * 6}",
            "-s", f"SKILLGRAPH_BATCH_DETECT_TIMEOUT={DETECT_TIMEOUT}", "-s", "SKILLGRAPH_BATCH_PROGRESS_INTERVAL=2",
            *_settings(graphs, tmp_path)]
    t0 = time.monotonic()
    proc = run_scrapy(args, timeout=240)
    took = time.monotonic() - t0
    wall = CRAWL_TIMEOUT + GRACE
    # A bound, not a speed check: detection, then two rounds of two sites, each at most its wall bound
    # plus the SIGTERM->SIGKILL wait, plus generous start-up slack for a loaded machine.
    assert took < DETECT_TIMEOUT + math.ceil(4 / JOBS) * (wall + KILL_WAIT) + 60, took
    assert proc.returncode == 1, "a killed site makes the batch exit 1"

    report = json.loads((graphs / "batch-report.json").read_text())
    sites = {s["name"]: s for s in report["sites"]}
    # Run order, not completion order: a 15-page llms build may well finish after a 3-page sitemap one.
    run_order = [s["name"] for s in sorted(report["sites"], key=lambda s: s["started"])]
    assert set(run_order[:2]) == {"chakra_ui", "langchain"}, run_order
    assert run_order[2:] == ["k8s_docs", "rust_book"], run_order
    assert sorted(s["order"] for s in report["sites"]) == [1, 2, 3, 4]
    assert report["detection"]["chakra_ui"]["strategy"] == "llms-full"
    assert report["detection"]["langchain"]["strategy"] == "llms-index"
    assert report["detection"]["k8s_docs"]["strategy"] == "sitemap"
    assert report["detection"]["rust_book"]["error"] == f"detection timed out after {DETECT_TIMEOUT}s"
    for name, pages in (("chakra_ui", 15), ("langchain", 3), ("k8s_docs", 3)):
        assert sites[name]["status"] == "ok" and sites[name]["pages"] == pages, sites[name]
        assert (graphs / name / "sources.json").exists()
    hung = sites["rust_book"]
    assert hung["status"] == "killed" and hung["reason"].startswith(f"killed after {wall}s"), hung
    assert wall <= hung["elapsed"] <= wall + KILL_WAIT + 5, hung
    assert report["counts"] == {"ok": 3, "failed": 0, "killed": 1}
    with pytest.raises(ProcessLookupError):
        os.killpg(hung["pid"], 0)  # nothing of its process group is left

    # The killed site keeps its previous graph, and says why beside it.
    assert os.readlink(graphs / "rust_book") == before_target
    assert {p.name: p.read_text() for p in (graphs / "rust_book").iterdir()} == before
    failed = json.loads((graphs / "rust_book.failed.json").read_text())
    assert failed["finish_reason"] == "killed" and failed["kept_previous"] is True
    assert "/book/" in batch_sites["hanging"].paths() or "/robots.txt" in batch_sites["hanging"].paths()

    out = proc.stdout
    assert re.search(r"^\[ *[\d.]+s\] running +rust_book +\? +\d+ pages +[\d.]+s$", out, re.M), out
    assert re.search(r"^\[ *[\d.]+s\] killed +rust_book .* killed after", out, re.M), out
    assert re.search(r"^\[ *[\d.]+s\] ok +k8s_docs +sitemap +3 pages", out, re.M), out
    assert "site" in out and "status" in out and f"report: {graphs / 'batch-report.json'}" in out


def test_batch_refuses_unknown_and_generic_spiders(tmp_path: Path) -> None:
    proc = run_scrapy(["batch", "docs", "no_such_site", "-s", f"SKILLGRAPH_GRAPHS_DIR={tmp_path}"], timeout=60)
    assert proc.returncode == 2
    assert "not domain spiders: docs, no_such_site" in proc.stderr
    assert not (tmp_path / "batch-report.json").exists()
