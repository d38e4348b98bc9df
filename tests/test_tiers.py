"""The tier ladder, crawled for real: content negotiation, block pages, best effort.

Sites: ``negotiate_site`` (thin HTML; full markdown on ``Accept: text/markdown``,
served by a negotiating loopback server defined here) and ``blocked_site``
(block pages from ../shared/corpus/block_pages/ answered with 403/429/503/200).
Block pages go through every tier, the browser render included (real Chromium).
"""

from __future__ import annotations

from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from skillgraph.tiers import code_fences_kept
from tests.conftest import SITES, corpus_file
from tests.servers import LoopbackHTTPServer, Rule, SiteServer


class NegotiatingServer(LoopbackHTTPServer):
    """Serves a directory; a request accepting ``text/markdown`` gets the page's ``.md`` sibling."""

    def __init__(self, root: Path) -> None:
        self.accepts: list[tuple[str, str]] = []  # (path, Accept)
        server = self

        class Handler(SimpleHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, directory=str(root), **kwargs)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:
                accept = self.headers.get("Accept", "")
                server.accepts.append((self.path, accept))
                twin = root / self.path.lstrip("/").replace(".html", ".md")
                if "text/markdown" in accept and self.path.endswith(".html") and twin.is_file():
                    body = twin.read_bytes()
                    self.send_response(200)
                    self.send_header("Content-Type", "text/markdown; charset=utf-8")
                    self.send_header("Vary", "Accept")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                super().do_GET()

        super().__init__(Handler)


BLOCK_PAGES = {  # path: (status, headers, corpus file, expected label, has scripts: worth a browser render)
    "/docs/challenge.html": (403, {"Server": "cloudflare", "cf-mitigated": "challenge"},
                             "cloudflare_iuam_just-a-moment_2020-05-27__cloudscraper.html", "cloudflare-challenge",
                             True),
    "/docs/limited.html": (429, {"Retry-After": "1"}, "gitlab_429_too-many-requests.html", "rate-limit", False),
    "/docs/unavailable.html": (503, {}, "cloudfront_502_request-could-not-be-satisfied__binance.html", "server-error",
                               False),
    "/docs/missing.html": (200, {}, "griffe__mkdocs-material_404.html", "not-found", True),
    "/docs/login.html": (200, {}, "login-wall_login-form__att-abbottvideo.html", "login-wall", True),
}
TEXT_BLOCKS = {  # plain-text error answers: examined and listed by TierErrorMiddleware, never taken for markdown
    "/docs/quota.html": (429, b"Too Many Requests", "rate-limit"),
    "/docs/denied.html": (403, b"Forbidden", "forbidden"),
}


@pytest.fixture(scope="module")
def negotiate_site() -> Iterator[NegotiatingServer]:
    server = NegotiatingServer(SITES / "negotiate_site")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def blocked_site() -> Iterator[SiteServer]:
    rules = {path: Rule(status, {**headers, "Content-Type": "text/html; charset=utf-8"},
                        corpus_file(f"block_pages/{name}").read_bytes())
             for path, (status, headers, name, _, _) in BLOCK_PAGES.items()}
    rules.update({path: Rule(status, {"Content-Type": "text/plain"}, body)
                  for path, (status, body, _) in TEXT_BLOCKS.items()})
    server = SiteServer(SITES / "blocked_site", rules=rules)
    yield server
    server.stop()


def allow(*urls: str) -> dict[str, str]:
    """Test settings: the SSRF guard lets exactly these loopback servers through."""
    return {"SKILLGRAPH_SSRF_ALLOWLIST": ",".join(u.split("//")[1].rstrip("/") for u in urls),
            "SKILLGRAPH_RECENCY_HOURS": "0"}


def pages_by_url(sources: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["url"]: p for p in sources["pages"]}


def test_negotiated_markdown_is_used_and_code_fences_are_checked(crawl, negotiate_site: NegotiatingServer) -> None:
    site = negotiate_site.url
    result = crawl("docs", url=site + "docs/index.html", graph="negotiate",
                   settings={**allow(site), "SKILLGRAPH_RENDER_ENABLED": "False"})
    assert result.returncode == 0, result.log[-3000:]
    sources = result.sources
    pages = pages_by_url(sources)
    assert pages[site + "docs/index.html"]["tier"] == "html", "a good HTML page stays on the html tier"
    install = pages[site + "docs/install.html"]
    assert install["tier"] == "negotiated"
    assert install["quality"] >= 0.5
    text = (result.graph / install["file"]).read_text()
    assert "```bash" in text and "relay --version" in text and "```ini" in text
    # The markdown that lost the HTML's <pre> blocks is refused; render is off: best effort, flagged.
    config = pages[site + "docs/config.html"]
    assert config["tier"] == "best-effort"
    warnings = [w for w in sources["warnings"] if w["url"] == site + "docs/config.html"]
    assert [w["kind"] for w in warnings] == ["best-effort"]
    assert "code fences lost" in warnings[0]["message"]
    negotiated = {path for path, accept in negotiate_site.accepts if "text/markdown" in accept}
    assert negotiated == {"/docs/install.html", "/docs/config.html"}, "only pages that failed the gates"
    assert result.stats["skillgraph/tiers/negotiated/passed"] == 1
    assert result.stats["skillgraph/tiers/negotiated/code_fences_lost"] == 1
    assert result.stats["skillgraph/tiers/best_effort"] == 1
    assert "skillgraph/tiers/render/requested" not in result.stats


def test_block_pages_are_examined_at_every_tier_and_listed_not_written(crawl, blocked_site: SiteServer) -> None:
    site = blocked_site.url
    result = crawl("docs", url=site + "docs/", graph="blocked",
                   settings={**allow(site), "SKILLGRAPH_RENDER_TIMEOUT": "5", "RETRY_TIMES": "1"})
    assert result.returncode == 0, result.log[-3000:]
    sources = result.sources
    pages = pages_by_url(sources)
    assert set(pages) == {site + "docs/", site + "docs/ok.html"}, "block pages are never written as content"
    assert all(p["tier"] == "html" and p["quality"] >= 0.5 for p in pages.values())
    blocked = {w["url"]: w for w in sources["warnings"] if w["kind"] == "blocked"}
    assert {url: w["label"] for url, w in blocked.items()} == {
        **{site + path.lstrip("/"): label for path, (_, _, _, label, _) in BLOCK_PAGES.items()},
        **{site + path.lstrip("/"): label for path, (_, _, label) in TEXT_BLOCKS.items()}}
    for path, (status, _, _) in TEXT_BLOCKS.items():
        assert blocked[site + path.lstrip("/")]["message"].startswith(f"HTTP {status} with a non-HTML body")
        # fetched (and a 429 retried once), then refused: no negotiation, no render for a text error
        assert blocked_site.paths().count(path) == (2 if status == 429 else 1)
    for path, (*_, scripted) in BLOCK_PAGES.items():
        message = blocked[site + path.lstrip("/")]["message"]
        assert message.startswith("blocked at every tier") and "html: blocked" in message
        assert ("render: blocked" in message) is scripted, "pages with scripts went through the browser too"
        assert ("render: skipped: the page has no scripts" in message) is not scripted
    for md in result.markdown_files():
        assert "Just a moment" not in md.read_text() and "Too Many Requests" not in md.read_text()
    # Non-2xx answers reached the ladder (after retries) instead of being dropped by HttpErrorMiddleware.
    for status in (403, 429, 503):
        assert result.stats[f"skillgraph/tiers/status/{status}"] >= 1
    rendered = sum(1 for *_, scripted in BLOCK_PAGES.values() if scripted)
    assert result.stats["skillgraph/tiers/render/requested"] == rendered
    assert result.stats["skillgraph/tiers/render/skipped"] == len(BLOCK_PAGES) - rendered
    assert result.stats["playwright/page_count"] == result.stats["playwright/page_count/closed"] == rendered
    # 429/503 were retried by RetryMiddleware first (RETRY_TIMES=1), and only then examined.
    assert result.stats["retry/max_reached"] == 3


SHELL_PAGE = ('<!doctype html><html><head><title>Widget app</title><script type="module" src="static/app.js">'
              '</script></head><body><div id="root"></div></body></html>')
SHELL_MARKDOWN = "# Widget app\n\n" + "The widget app schedules jobs and reports on them every minute. " * 10 + "\n"
MOVED_PAGE = ("<html><head><title>Moved content</title></head><body><main><p>Teaser of the page.</p></main>"
              "<div class='content'><h1>Moved content</h1>"
              + "<p>The content column of this page is outside its main landmark, with code. </p>" * 6
              + "<pre>pip install widget-library</pre><pre>import widget_library as w\nw.run()</pre>"
              "<pre>w.stop(now=True)</pre></div></body></html>")


def test_shells_negotiate_before_render_and_re_extraction_is_warned(crawl, tmp_path: Path) -> None:
    root = tmp_path / "site"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "index.html").write_text(
        "<html><head><title>Widget docs index</title></head><body><main><h1>Widget docs index</h1>"
        + "<p>Start here to learn how the widget service works. </p>" * 8
        + '<p><a href="app.html">App</a> <a href="moved.html">Moved</a></p></main></body></html>')
    (root / "docs" / "app.html").write_text(SHELL_PAGE)
    (root / "docs" / "app.md").write_text(SHELL_MARKDOWN)
    (root / "docs" / "moved.html").write_text(MOVED_PAGE)
    server = NegotiatingServer(root)
    try:
        site = server.url
        result = crawl("docs", url=site + "docs/index.html", graph="shells",
                       settings={**allow(site), "SKILLGRAPH_RENDER_ENABLED": "True"})
    finally:
        server.stop()
    assert result.returncode == 0, result.log[-3000:]
    pages = pages_by_url(result.sources)
    # A client-side shell tries the cheap tier first: one HTTP request, no browser.
    assert pages[site + "docs/app.html"]["tier"] == "negotiated"
    assert ("/docs/app.html", "text/markdown, text/x-markdown;q=0.9") in server.accepts
    assert result.stats["skillgraph/tiers/shell_detected"] == 1
    assert "skillgraph/tiers/render/requested" not in result.stats
    # A landmark that left the page's code outside: re-extracted from the scored column, and said so.
    moved = pages[site + "docs/moved.html"]
    assert moved["tier"] == "html"
    text = (result.graph / moved["file"]).read_text()
    assert text.count("```") == 6 and "Teaser of the page" not in text
    warnings = [w for w in result.sources["warnings"] if w["url"] == site + "docs/moved.html"]
    assert [w["kind"] for w in warnings] == ["re-extracted"]
    assert "main: the element holds 0 of the page's 3 code blocks" in warnings[0]["message"]
    assert result.stats["skillgraph/tiers/reextracted"] == 1


@pytest.mark.parametrize(("markdown", "html_blocks", "ok"), [
    ("# A\n\n```py\nx = 1\n```\n", 1, True),
    ("# A\n\nx = 1\n", 1, False),
    ("# A\n\n```py\nx = 1\n", 0, False),  # unbalanced
    ("# A\n\nno code\n", 0, True),
    ("```\na\n```\n\n~~~\nb\n~~~\n", 3, True),  # half of the <pre> blocks is enough
])
def test_code_fence_check(markdown: str, html_blocks: int, ok: bool) -> None:
    assert (code_fences_kept(markdown, html_blocks) == "") is ok
