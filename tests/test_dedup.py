"""Recrawls of a real fixture site: content dedup, recency dedup, 304s and ``changes``, exactly."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import SITES, CrawlResult
from tests.redis_server import RedisServer, redis_server  # noqa: F401 - fixture
from tests.servers import SiteServer, copy_site

PAGES = ("index", "a", "b", "c", "d")


@pytest.fixture
def recrawl_site(tmp_path: Path) -> Iterator[SiteServer]:
    """A fresh copy of ``recrawl_site`` per test: the tests edit it between runs."""
    server = SiteServer(copy_site(SITES / "recrawl_site", tmp_path / "recrawl_site"))
    yield server
    server.stop()


def settings_for(site: SiteServer, **extra: object) -> dict[str, object]:
    # No page here needs a browser: the render tier is off so no browser starts with each crawl.
    return {"SKILLGRAPH_SSRF_ALLOWLIST": f"127.0.0.1:{site.port}", "SKILLGRAPH_RENDER_ENABLED": False, **extra}


def edit_site(root: Path) -> None:
    """b changes (and links the new page e), c changes only in volatile tokens, d is deleted."""
    docs = root / "docs"
    b = docs / "b.html"
    b.write_text(b.read_text().replace(
        "<p>See the other guides", '<p>After an upgrade, read <a href="e.html">Upgrading Widget</a>.</p>\n'
        "<p>See the other guides"))
    c = docs / "c.html"
    c.write_text(c.read_text().replace("TOKEN-0001", "TOKEN-0002"))
    (docs / "d.html").unlink()
    later = time.time() + 120  # Last-Modified has 1 s resolution: make the edits unmistakably newer
    for path in (b, c):
        os.utime(path, (later, later))


def page_requests(site: SiteServer, since: int) -> list[tuple[str, dict[str, str]]]:
    return [(path, headers) for _, path, headers in site.requests[since:] if path.endswith(".html")]


def queue(server: RedisServer) -> list[dict]:
    return [json.loads(raw) for raw in server.client().lrange("skillgraph:queue", 0, -1)]


def check(result: CrawlResult) -> dict:
    assert result.returncode == 0, result.log[-3000:]
    assert result.stats["skillgraph/graph/committed"] == 1
    return result.sources


def test_recrawl_writes_and_enqueues_only_what_changed(crawl, recrawl_site: SiteServer, redis_server: RedisServer,  # noqa: F811
                                                       tmp_path: Path) -> None:
    site, graphs, items = recrawl_site, tmp_path / "graphs", tmp_path / "items" / "docs"
    url = site.url + "docs/index.html"
    base = settings_for(site, REDIS_URL=redis_server.url)

    first = crawl("docs", graphs=graphs, settings=base, url=url, graph="widget")
    sources = check(first)
    assert sources["changes"] == {"new": 5, "changed": 0, "unchanged": 0, "removed": 0}
    assert {p["url"] for p in sources["pages"]} == {site.url + f"docs/{p}.html" for p in PAGES}
    docs = [json.loads(p.read_text()) for p in items.glob("*.json")]
    assert all(p.name == d["sha256"] + ".json" for p, d in zip(items.glob("*.json"), docs, strict=True))
    # Joined by URL: sources.json hashes the file as written (links to other pages point at their files).
    assert sorted(d["url"] for d in docs) == sorted(p["url"] for p in sources["pages"])
    assert sorted(d["sha256"] for d in queue(redis_server)) == sorted(d["sha256"] for d in docs)
    assert not list(items.glob("pending/*")), "every document was pushed"
    c_before = (first.graph / "c.md").read_text()

    edit_site(Path(site.root))
    mark = len(site.requests)
    second = crawl("docs", graphs=graphs, settings={**base, "SKILLGRAPH_RECENCY_HOURS": 0}, url=url, graph="widget")
    sources = check(second)
    # b changed on the site; index (a 304) changed in the graph: its link to d, gone, is a web link again.
    assert sources["changes"] == {"new": 1, "changed": 2, "unchanged": 2, "removed": 1}
    index = (second.graph / "index.md").read_text()
    assert "](a.md)" in index and f"]({site.url}docs/d.html)" in index and "d.md" not in index
    stats = second.stats
    assert stats["skillgraph/conditional/not_modified"] == 2, "index and a answer 304"
    assert stats["skillgraph/graph/carried_over"] == 2
    assert stats["skillgraph/dedup/unchanged"] == 1, "c: a new body, the same markdown"
    assert stats["skillgraph/dedup/changed"] == 1 and stats["skillgraph/dedup/new"] == 1
    assert stats["skillgraph/dual_write/disk_written"] == 2 and stats["skillgraph/dual_write/pushed"] == 2
    assert stats["skillgraph/dual_write/skipped_unchanged"] == 1
    requests = dict(page_requests(site, mark))
    assert "If-Modified-Since" in requests["/docs/a.html"], "validators are sent for pages in the live graph"
    assert "If-Modified-Since" not in requests["/docs/e.html"], "a new page has nothing to revalidate"
    assert (second.graph / "c.md").read_text() == c_before
    assert "Upgrading Widget" in (second.graph / "e.md").read_text()
    assert not (second.graph / "d.md").exists()
    by_url = {p["url"]: p for p in sources["pages"]}
    assert len(list(items.glob("*.json"))) == 7
    queued = queue(redis_server)
    assert len(queued) == 7 and len({d["sha256"] for d in queued}) == 7, "nothing enqueued twice"
    assert {d["url"] for d in queued[5:]} == {site.url + "docs/b.html", site.url + "docs/e.html"}
    assert all(d["url"] in by_url for d in queued[5:])

    mark = len(site.requests)
    third = crawl("docs", graphs=graphs, settings=base, url=url, graph="widget")  # recency: 24 h by default
    sources = check(third)
    assert sources["changes"] == {"new": 0, "changed": 0, "unchanged": 5, "removed": 0}
    assert third.stats["skillgraph/recency/skipped"] == 5
    fetched = [path for path, _ in page_requests(site, mark)]
    assert fetched == ["/docs/index.html"], "only the profiler's probe of the start URL: pages are skipped"
    assert [p["sha256"] for p in sources["pages"]] != [] and len(queue(redis_server)) == 7
    assert {p["url"]: p["sha256"] for p in sources["pages"]} == {u: p["sha256"] for u, p in by_url.items()}
    client = redis_server.client()
    latest = {d["url"]: d["sha256"] for d in queue(redis_server)}  # the last stored document of each URL
    for page in sources["pages"]:
        assert client.get("skillgraph:content_hash:" + page["url"]) == latest[page["url"]].encode()
        assert client.get("skillgraph:scraped:" + page["url"]) is not None


def test_local_mode_keeps_state_in_sqlite(crawl, recrawl_site: SiteServer, tmp_path: Path) -> None:
    site, graphs = recrawl_site, tmp_path / "graphs"
    url = site.url + "docs/index.html"
    first = crawl("docs", graphs=graphs, settings=settings_for(site), url=url, graph="local")
    assert check(first)["changes"]["new"] == 5
    assert first.stats["skillgraph/dual_write/disk_written"] == 5
    assert "skillgraph/dual_write/pushed" not in first.stats, "no REDIS_URL: no queue"
    assert (tmp_path / "state.sqlite3").exists()
    second = crawl("docs", graphs=graphs, settings=settings_for(site, SKILLGRAPH_RECENCY_HOURS=0), url=url,
                   graph="local")
    assert check(second)["changes"] == {"new": 0, "changed": 0, "unchanged": 5, "removed": 0}
    assert second.stats["skillgraph/conditional/not_modified"] == 5
    assert "skillgraph/dual_write/disk_written" not in second.stats
    assert len(list((tmp_path / "items" / "docs").glob("*.json"))) == 5
