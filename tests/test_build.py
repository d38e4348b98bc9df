"""The Build: every URL accounted for, one admission rule, honest outcomes (issue 11)."""

from __future__ import annotations

import asyncio
import gzip
import json
import shutil
from pathlib import Path

import pytest
from scrapy.utils.test import get_crawler

from skillgraph.build import Build
from skillgraph.signals import build_warning, profile_detected
from skillgraph.strategy.profiler import SiteProfile
from tests.conftest import PYTHON_DOCS, SITES, CrawlResult
from tests.servers import SiteServer, copy_site

POSTGRES_DOCS = Path("/usr/share/doc/postgresql-doc-15/html")
NO_RENDER = {"SKILLGRAPH_RENDER_ENABLED": False}


def crawl_build(strategy: str = "crawl", max_pages: int = 3) -> Build:
    crawler = get_crawler(settings_dict={"SKILLGRAPH_MAX_PAGES": max_pages})
    crawler.stats.open_spider()
    build = Build.of(crawler)
    profile = SiteProfile("http://s/docs/", strategy, "http://s/docs/", "http://s/docs/", "2026-11-29T12:00:00Z")
    crawler.signals.send_catch_log(profile_detected, profile=profile)
    return build


# the ledger and the admission rule ---------------------------------------------------


def test_every_learned_url_ends_as_a_page_a_skip_or_unreached() -> None:
    build = crawl_build(max_pages=0)
    assert build.learn("http://s/docs/", "start")
    assert build.learn("http://s/docs/a.html#part", "link"), "fragments name no other page"
    assert not build.learn("http://s/docs/a.html", "link"), "the same page once"
    build.learn("http://s/docs/b.html", "link")
    build.learn("http://s/docs/c.html", "link")
    build.outside("https://elsewhere/x")
    build.outside("https://elsewhere/x")
    assert build.admit("http://s/docs/", "h1") == "new"
    assert build.admit("http://s/docs/", "h1") == "same-url"
    assert build.admit("http://s/docs/a.html", "h1") == "same-content"
    build.skip("http://s/docs/b.html", "http", status=404)
    build.skip("http://s/docs/b.html", "network"), "the first outcome stands"
    assert build.unreached() == ["http://s/docs/c.html"]
    skipped = {e.url: e.skipped_json() for e in build.skipped()}
    assert skipped["http://s/docs/b.html"] == {"url": "http://s/docs/b.html", "reason": "http", "status": 404}
    assert skipped["http://s/docs/a.html"]["reason"] == "duplicate"
    assert build.skipped_counts() == {"duplicate": 1, "http": 1, "out-of-scope": 1}
    assert build.aliases == {"http://s/docs/a.html": "http://s/docs/"}


def test_corpus_sections_may_repeat_content() -> None:
    build = crawl_build("llms-full")
    assert build.admit("http://s/llms-full.txt#a", "same", corpus=True) == "new"
    assert build.admit("http://s/llms-full.txt#b", "same", corpus=True) == "new"


def test_a_shallower_link_relearns_a_url_skipped_for_depth() -> None:
    build = crawl_build()
    build.learn("http://s/docs/deep.html", "link", depth=21)
    build.skip("http://s/docs/deep.html", "depth")
    assert not build.learn("http://s/docs/deep.html", "link", depth=22)
    assert build.learn("http://s/docs/deep.html", "link", depth=2), "found two clicks away: fetched after all"
    assert build.unreached() == ["http://s/docs/deep.html"]


def test_warnings_that_drop_a_page_are_skips() -> None:
    build = crawl_build()
    build.learn("http://s/docs/login.html", "link")
    build.crawler.signals.send_catch_log(build_warning, kind="blocked", url="http://s/docs/login.html",
                                         message="login wall", label="login")
    assert build.skipped()[0].reason == "blocked"
    assert build.warnings[0]["kind"] == "blocked"


def test_budget_counts_pages_in_flight_and_refuses_past_the_bound() -> None:
    build = crawl_build(max_pages=2)

    async def scenario() -> list[bool]:
        assert await build.wait_for_budget("http://s/docs/a.html", 5)
        assert await build.wait_for_budget("http://s/docs/b.html", 5)
        waiting = asyncio.ensure_future(build.wait_for_budget("http://s/docs/c.html", 5))
        await asyncio.sleep(0.05)
        assert not waiting.done(), "two pages in flight fill a budget of two"
        build.skip("http://s/docs/a.html", "http", status=404)  # a place frees: c may go
        assert await waiting
        build.admit("http://s/docs/b.html", "hb")
        build.admit("http://s/docs/c.html", "hc")
        return [await build.wait_for_budget("http://s/docs/d.html", 5)]

    assert asyncio.run(scenario()) == [False], "the bound is reached: no fetch past it"


def test_truncation_lists_what_was_left() -> None:
    build = crawl_build()
    build.learn("http://s/docs/", "start")
    build.learn("http://s/docs/a.html", "link")
    build.admit("http://s/docs/", "h")
    assert build.truncation() is None
    build.interrupt(2)
    assert build.truncation() == {"limit": None, "reason": "interrupted", "skipped": 1,
                                  "unreached": ["http://s/docs/a.html"]}


# crawls on loopback -----------------------------------------------------------------


def accounted(result: CrawlResult) -> tuple[set[str], set[str]]:
    sources = result.sources
    return {p["url"] for p in sources["pages"]}, {s["url"] for s in sources["skipped"]}


def test_sitemap_urls_that_answer_404_are_skipped_with_their_status(crawl, tmp_path: Path) -> None:
    root = copy_site(SITES / "sitemap_site", tmp_path / "site")
    server = SiteServer(root)
    try:
        origin = server.url.rstrip("/")
        pages = root / "maps" / "pages.xml"
        missing = [f"{origin}/docs/gone-{n}.html" for n in range(4)]
        extra = "".join(f"<url><loc>{u}</loc></url>" for u in missing)
        pages.write_text(pages.read_text().replace("{{ORIGIN}}", origin).replace("</urlset>", extra + "</urlset>"))
        (root / "maps" / "index.xml").write_text((root / "maps" / "index.xml").read_text().replace("{{ORIGIN}}",
                                                                                                   origin))
        (root / "maps" / "pages.xml.gz").write_bytes(gzip.compress(pages.read_bytes()))
        pages.unlink()
        result = crawl("docs", url=server.url + "docs/", settings=NO_RENDER)
    finally:
        server.stop()
    assert result.returncode == 0, result.log[-3000:]
    sources = result.sources
    assert sources["scrape_profile"]["strategy"] == "sitemap"
    assert len(sources["pages"]) == 3
    gone = [s for s in sources["skipped"] if s["url"] in missing]
    assert sorted(s["url"] for s in gone) == missing
    assert all(s["reason"] == "http" and s["status"] == 404 for s in gone)
    assert sources["skipped_counts"] == {"http": 4, "out-of-scope": 1}, "the blog URL is outside /docs/"


def test_llms_index_links_off_site_are_never_requested_and_the_build_falls_back(crawl, tmp_path: Path) -> None:
    root = copy_site(SITES / "crawl_site", tmp_path / "site")
    server = SiteServer(root)
    try:
        other = f"http://localhost:{server.port}/docs/guide"
        (root / "docs" / "llms.txt").write_text(
            "# Gadget\n\n> Docs hosted elsewhere.\n\n## Guides\n\n"
            + "".join(f"- [{n}]({other}/{n}.html): guide {n}\n" for n in "abc"))
        # localhost is allowed by the SSRF guard here: only the off-site rule may keep requests away
        allow = f"127.0.0.1:{server.port},localhost:{server.port}"
        result = crawl("docs", url=server.url + "docs/", settings={**NO_RENDER, "SKILLGRAPH_SSRF_ALLOWLIST": allow})
    finally:
        server.stop()
    assert result.returncode == 0, result.log[-3000:]
    hosts = {headers.get("Host", "") for _, _, headers in server.requests}
    assert not any(h.startswith("localhost") for h in hosts), "0 requests off the site"
    sources = result.sources
    assert sources["scrape_profile"]["strategy"] == "crawl", "an index with no page on the site falls through"
    probe = next(p for p in sources["scrape_profile"]["probes"] if p["url"].endswith("/docs/llms.txt"))
    assert probe["outcome"].startswith("rejected: all 3 links are off-site")
    offsite = [s for s in sources["skipped"] if s["reason"] == "off-site"]
    assert sorted(s["url"] for s in offsite) == [f"{other}/{n}.html" for n in "abc"]
    assert len(sources["pages"]) >= 7, "the site's own pages"


def test_a_404_start_page_exits_1_with_one_line(crawl, sites: dict[str, SiteServer]) -> None:
    result = crawl("docs", url=sites["crawl_site"].url + "docs/nowhere/missing.html", settings=NO_RENDER)
    assert result.returncode == 1
    last = result.log.rstrip().splitlines()[-1]
    assert last.startswith("skillgraph: ") and "HTTP 404" in last and "Traceback" not in last


def test_a_junk_build_cannot_replace_a_good_graph(crawl, sites: dict[str, SiteServer], tmp_path: Path) -> None:
    graphs = tmp_path / "graphs"
    good = crawl("docs", graphs=graphs, url=sites["crawl_site"].url + "docs/", graph="kept", settings=NO_RENDER)
    assert good.returncode == 0, good.log[-3000:]
    before = {p.name: p.read_text() for p in good.graph.iterdir()}
    assert len(good.sources["pages"]) >= 7
    shop = tmp_path / "shop"
    shop.mkdir()
    (shop / "index.html").write_text("<html><head><title>Shop</title></head><body><main><h1>Shop</h1>"
                                     + "<p>Buy our gadgets today, shipping is free for every order.</p>" * 8
                                     + "</main></body></html>")
    server = SiteServer(shop)
    try:
        junk = crawl("docs", graphs=graphs, url=server.url, graph="kept", settings=NO_RENDER)
    finally:
        server.stop()
    assert junk.returncode == 1, junk.log[-3000:]
    assert "SKILLGRAPH_ALLOW_SHRINK" in junk.log.rstrip().splitlines()[-1]
    assert {p.name: p.read_text() for p in (graphs / "kept").iterdir()} == before, "the graph is untouched"
    failed = json.loads((graphs / "kept.failed.json").read_text())
    assert "would remove" in failed["reason"]


def test_the_bound_keeps_the_top_of_the_site_and_the_next_run_completes_it(crawl, python_docs: SiteServer,
                                                                            tmp_path: Path) -> None:
    url = python_docs.url + "library/index.html"
    mark = len(python_docs.requests)  # a session-wide server: earlier tests' requests are listed too
    bounded = crawl("docs", url=url, settings={**NO_RENDER, "SKILLGRAPH_MAX_PAGES": 40})
    assert bounded.returncode == 0, bounded.log[-3000:]
    sources = bounded.sources
    files = {p["file"] for p in sources["pages"]}
    assert len(files) == 40
    for top in ("intro", "functions", "constants", "stdtypes", "exceptions", "string", "re"):
        assert f"{top}.md" in files, f"{top} is near the top of the index: breadth first keeps it"
    assert sources["truncated"]["reason"] == "max_pages" and sources["truncated"]["skipped"] > 200
    fetched = [p for _, p, _ in python_docs.requests[mark:] if p.startswith("/library/") and p.endswith(".html")]
    assert len(fetched) <= 41, f"no fetch past the page budget ({len(fetched)} pages fetched for 40)"

    whole = crawl("docs", url=url, settings={**NO_RENDER, "SKILLGRAPH_MAX_PAGES": 0})
    assert whole.returncode == 0, whole.log[-3000:]
    assert whole.sources["truncated"] is None
    pages, skipped = accounted(whole)
    names = {u.rsplit("/", 1)[-1] for u in pages | skipped if "/library/" in u}
    expected = {p.name for p in (PYTHON_DOCS / "library").glob("*.html")}
    assert not expected - names, f"unaccounted: {sorted(expected - names)[:10]}"
    assert whole.sources["changes"]["removed"] == 0


def test_postgresql_docs_every_page_accounted_for(crawl, tmp_path: Path) -> None:
    if not (POSTGRES_DOCS / "index.html").exists():
        pytest.fail(f"{POSTGRES_DOCS} missing: install Debian's postgresql-doc-15 (.ci/run does)")
    root = tmp_path / "pg"
    shutil.copytree(POSTGRES_DOCS, root)
    server = SiteServer(root)
    try:
        result = crawl("docs", url=server.url + "index.html", timeout=900,
                       settings={**NO_RENDER, "SKILLGRAPH_MAX_PAGES": 3000, "SKILLGRAPH_CRAWL_TIMEOUT": 900})
    finally:
        server.stop()
    assert result.returncode == 0, result.log[-3000:]
    assert result.sources["truncated"] is None
    pages, skipped = accounted(result)
    names = {u.rsplit("/", 1)[-1] for u in pages | skipped}
    expected = {p.name for p in root.glob("*.html")}
    assert len(pages) >= 1100
    assert not expected - names, f"unaccounted: {sorted(expected - names)[:10]}"
