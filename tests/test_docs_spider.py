"""Real crawls over loopback, one per strategy, asserting on files, sources.json and stats."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from tests.conftest import SCOPED_LLMS_FULL, CrawlResult
from tests.servers import SiteServer

HTML_TAG = re.compile(
    r"</?(?:html|head|body|div|span|p|a|script|style|nav|main|table|tr|td|pre|code|ul|li|h[1-6])\b[^>]*>", re.I
)


FENCED = re.compile(r"^ *(`{3,}|~{3,}).*?^ *\1", re.M | re.S)
LINK_DEST = re.compile(r"\]\(([^()\s]+)\)")


def assert_links_resolve(graph: Path) -> None:
    """Every link in prose is a file of the graph, an absolute URL, an #anchor or mailto: (never site-relative)."""
    for path in graph.glob("*.md"):
        for dest in LINK_DEST.findall(FENCED.sub("", path.read_text())):
            if dest.startswith(("http://", "https://", "#", "mailto:")):
                continue
            assert (graph / dest.split("#")[0]).is_file(), f"{path.name}: link to {dest}"


def assert_built(result: CrawlResult, strategy: str, min_pages: int) -> dict:
    assert result.returncode == 0, result.log[-3000:]
    assert result.graph.is_symlink(), "graphs/<name> is switched atomically as a symlink"
    sources = result.sources
    assert sources["scrape_profile"]["strategy"] == strategy
    assert len(sources["pages"]) >= min_pages
    files = {p.name for p in result.markdown_files()}
    assert {p["file"] for p in sources["pages"]} == files
    assert result.stats["skillgraph/graph/pages"] == len(sources["pages"])
    for page in sources["pages"]:
        assert set(page) == {"url", "file", "sha256", "fetched_at", "tier", "quality"}
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", page["fetched_at"])
        assert page["tier"] in {"corpus", "markdown", "html", "negotiated", "render", "best-effort"}
        written = (result.graph / page["file"]).read_bytes()
        assert page["sha256"] == hashlib.sha256(written).hexdigest(), "sources.json hashes the file as written"
    for key in ("name", "built_at", "scrape_profile", "pages", "truncated", "warnings", "changes"):
        assert key in sources
    assert_links_resolve(result.graph)
    return sources


def test_docs_scope_llms_full_beats_root_marketing_index(crawl, sites: dict[str, SiteServer]) -> None:
    site = sites["llms_scoped"]
    result = crawl("docs", url=site.url + "docs/", graph="scoped")
    sources = assert_built(result, "llms-full", 5)
    assert sources["scrape_profile"]["source"] == site.url + "docs/llms-full.txt"
    assert "/llms.txt" not in site.paths(), "the root marketing index is never probed once docs wins"
    assert all(p["tier"] == "corpus" for p in sources["pages"])
    joined = "".join((result.graph / p["file"]).read_text() for p in sources["pages"])
    assert joined == SCOPED_LLMS_FULL.read_text(), "the section files together hold the whole corpus, in order"
    assert all("#" in p["url"] for p in sources["pages"])


def test_stub_llms_full_falls_through_to_index_with_html_links(crawl, sites: dict[str, SiteServer]) -> None:
    site = sites["llms_stub"]
    result = crawl("docs", url=site.url + "docs/", graph="stub")
    sources = assert_built(result, "llms-index", 4)
    probes = {p["url"]: p["outcome"] for p in sources["scrape_profile"]["probes"]}
    assert probes[site.url + "docs/llms-full.txt"].startswith("rejected:")
    assert probes[site.url + "docs/llms.txt"] == "accepted"
    by_url = {p["url"]: p for p in sources["pages"]}
    assert by_url[site.url + "docs/guide.html"]["tier"] == "markdown", "the .md twin is preferred"
    assert by_url[site.url + "docs/api.html"]["tier"] == "html", "no twin: the HTML page is extracted"
    assert by_url[site.url + "docs/notes/changelog.md"]["tier"] == "markdown"
    assert site.url + "docs/history.html" in by_url, "the Optional section is fetched by default"
    api = (result.graph / by_url[site.url + "docs/api.html"]["file"]).read_text()
    assert "client = acme.connect" in api and "```" in api
    assert "© Acme" not in api
    guide = (result.graph / by_url[site.url + "docs/guide.html"]["file"]).read_text()
    api_file = by_url[site.url + "docs/api.html"]["file"]
    changelog_file = by_url[site.url + "docs/notes/changelog.md"]["file"]
    assert f"[API reference]({api_file}#connect)" in guide and f"[changelog]({changelog_file})" in guide, \
        "the twin's relative links point at the graph's files"
    assert f"[status page]({site.url}status.html)" in guide, "a page outside the graph: its absolute URL"
    for md in result.markdown_files():
        assert not HTML_TAG.search(md.read_text()), f"HTML left in {md.name}"


def test_robots_sitemap_index_with_gz_child(crawl, sites: dict[str, SiteServer]) -> None:
    site = sites["sitemap_site"]
    result = crawl("docs", url=site.url + "docs/", graph="maps")
    sources = assert_built(result, "sitemap", 3)
    assert sources["scrape_profile"]["source"] == site.url + "maps/index.xml"
    urls = {p["url"] for p in sources["pages"]}
    assert urls == {site.url + "docs/", site.url + "docs/install.html", site.url + "docs/usage.html"}
    assert "/blog/launch.html" not in site.paths(), "sitemap URLs outside the scope are skipped"
    assert "/maps/pages.xml.gz" in site.paths()
    assert sources["truncated"] is None


def test_no_index_crawls_within_scope(crawl, sites: dict[str, SiteServer]) -> None:
    site = sites["crawl_site"]
    result = crawl("docs", url=site.url + "docs/index.html", graph="crawled")
    sources = assert_built(result, "crawl", 7)
    assert len(sources["pages"]) == 7
    assert "/other/elsewhere.html" not in site.paths()
    assert result.stats["skillgraph/crawl/out_of_scope"] >= 1
    assert sources["truncated"] is None
    index = next(p for p in sources["pages"] if p["url"].endswith("/docs/index.html"))
    text = (result.graph / index["file"]).read_text()
    local = re.findall(r"\]\(([^()\s:]+\.md)(?:#[^()\s]*)?\)", text)
    assert len(local) == 6 and all((result.graph / f).is_file() for f in local), text
    assert f"]({site.url}other/elsewhere.html)" in text and "](https://example.com/offsite)" in text
    assert result.stats["skillgraph/graph/local_links"] >= 6


def test_max_pages_cap_is_recorded(crawl, sites: dict[str, SiteServer]) -> None:
    site = sites["crawl_site"]
    result = crawl("docs", url=site.url + "docs/", graph="capped", settings={"SKILLGRAPH_MAX_PAGES": 3})
    sources = assert_built(result, "crawl", 3)
    assert len(sources["pages"]) == 3
    assert sources["truncated"]["reason"] == "max_pages"
    assert sources["truncated"]["limit"] == 3
    assert sources["truncated"]["skipped"] >= 1
    assert result.stats["finish_reason"] == "max_pages"
    assert any(w["kind"] == "truncated" for w in sources["warnings"])
    assert "truncated" in result.log


def test_failed_rebuild_keeps_the_old_graph(crawl, sites: dict[str, SiteServer], tmp_path: Path) -> None:
    graphs = tmp_path / "keep"
    good = crawl("docs", graphs=graphs, url=sites["crawl_site"].url + "docs/", graph="kept")
    before = assert_built(good, "crawl", 7)
    snapshot = {p.name: p.read_text() for p in good.graph.iterdir()}
    bad = crawl("docs", graphs=graphs, url=sites["broken"].url + "docs/", graph="kept")
    assert bad.returncode == 1, "a build that is not committed exits 1"
    assert bad.log.rstrip().splitlines()[-1].startswith("skillgraph: "), "one line says why"
    assert "HTTP 500" in bad.log.rstrip().splitlines()[-1]
    assert {p.name: p.read_text() for p in bad.graph.iterdir()} == snapshot
    failed = json.loads((graphs / "kept.failed.json").read_text())
    assert failed["reason"] == "no pages were written" and failed["kept_previous"] is True
    assert bad.stats["skillgraph/graph/failed"] == "no pages were written"
    assert json.loads((graphs / "kept" / "sources.json").read_text())["built_at"] == before["built_at"]


def test_rebuild_reports_changes(crawl, sites: dict[str, SiteServer], tmp_path: Path) -> None:
    graphs = tmp_path / "changes"
    first = crawl("docs", graphs=graphs, url=sites["sitemap_site"].url + "docs/", graph="again")
    assert assert_built(first, "sitemap", 3)["changes"] == {"new": 3, "changed": 0, "unchanged": 0, "removed": 0}
    second = crawl("docs", graphs=graphs, url=sites["sitemap_site"].url + "docs/", graph="again")
    assert assert_built(second, "sitemap", 3)["changes"] == {"new": 0, "changed": 0, "unchanged": 3, "removed": 0}
    assert not (graphs / "again.failed.json").exists()


def test_crawl_timeout_bounds_a_stuck_site(crawl, tmp_path: Path) -> None:
    """Pages that never answer cannot hold the build past its bound plus the grace."""
    import shutil

    from tests.conftest import SITES
    from tests.servers import Rule

    root = tmp_path / "stuck"
    shutil.copytree(SITES / "crawl_site", root)
    stuck = Rule(delay=120)
    server = SiteServer(root, rules={"/docs/guide/e.html": stuck, "/docs/guide/f.html": stuck})
    try:
        result = crawl("docs", url=server.url + "docs/", graph="stuck", timeout=100,
                       settings={"SKILLGRAPH_CRAWL_TIMEOUT": 4, "SKILLGRAPH_CRAWL_TIMEOUT_GRACE": 3,
                                 "DOWNLOAD_TIMEOUT": 60, "SKILLGRAPH_RENDER_ENABLED": False})
    finally:
        server.stop()
    assert result.returncode == 0, result.log[-3000:]
    sources = result.sources
    assert sources["truncated"]["reason"] == "crawl_timeout"
    assert sources["truncated"]["limit"] == 4
    assert sources["truncated"]["skipped"] >= 2
    assert len(sources["pages"]) == 5
    stats = result.stats
    assert stats["finish_reason"] == "crawl_timeout", "closed through the engine: the stats are written"
    assert stats["skillgraph/crawl_timeout/shortened"] >= 2, "the stuck downloads end by the deadline plus grace"
    left = {s["url"] for s in sources["skipped"]} | set(sources["truncated"]["unreached"])
    assert {u.rsplit("/", 1)[-1] for u in left} >= {"e.html", "f.html"}, "the stuck pages are accounted for"
    assert not [line for line in result.log.splitlines() if "Traceback" in line]


def test_crawl_timeout_drops_requests_waiting_for_their_delay(crawl, tmp_path: Path) -> None:
    """At the timeout, requests queued behind the host's delay are left for the next run, not sent one by one.

    30 llms.txt links behind a 1 s delay: the engine hands 16 to the downloader, which would send them a
    second apart before the spider could close (16 s past the bound); dropped, the crawl closes at once.
    """
    root = tmp_path / "site"
    (root / "docs").mkdir(parents=True)
    names = [f"page{n:02d}" for n in range(30)]
    (root / "docs" / "llms.txt").write_text("# Many\n\n> Many pages.\n\n## Docs\n\n"
                                            + "\n".join(f"- [{n}]({n}.md): about {n}" for n in names) + "\n")
    for name in names:
        (root / "docs" / f"{name}.md").write_text(f"# {name}\n\n" + f"{name} explains one thing in words. " * 20
                                                  + "\n\n```sh\nrun " + name + "\n```\n")
    server = SiteServer(root)
    try:
        result = crawl("docs", url=server.url + "docs/", graph="queued", timeout=100,
                       settings={"SKILLGRAPH_CRAWL_TIMEOUT": 5, "DOWNLOAD_DELAY": 1, "DOWNLOAD_DELAY_JITTER": 0,
                                 "SKILLGRAPH_RENDER_ENABLED": False})
    finally:
        server.stop()
    assert result.returncode == 0, result.log[-3000:]
    sources, stats = result.sources, result.stats
    assert sources["truncated"]["reason"] == "crawl_timeout" and stats["finish_reason"] == "crawl_timeout"
    assert stats["skillgraph/crawl_timeout/dropped"] >= 5, stats
    assert len(sources["pages"]) + sources["truncated"]["skipped"] == 30, "every link a page or left unreached"
    assert not sources["skipped"], "a dropped request is not a skip"
    # Sent one delay apart, the queued requests would have held the close for 10 s and more.
    assert stats["elapsed_time_seconds"] < 5 + 4, stats["elapsed_time_seconds"]
