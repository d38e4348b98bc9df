"""Politeness: Crawl-delay as the domain's delay, Retry-After on 429/503, robots.txt for our
User-Agent, and a User-Agent that names the bot and a contact URL. Real crawls on loopback.

Timing assertions are lower bounds only (a busy machine makes gaps longer, never shorter).
"""

from __future__ import annotations

import statistics
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from skillgraph.addon import user_agent
from skillgraph.middlewares.politeness import parse_retry_after
from tests.servers import SiteServer
from tests.test_hostile import RawServer, Send, page

FAST = {"SKILLGRAPH_RENDER_ENABLED": "False"}
CONTACT = "https://github.com/skillgraph/skillgraph"
PAGE = (
    "# {title}\n\nThis page documents {title} in enough words to be a real page: what it does,\n"
    "how to configure it, and what to expect when it runs.\n\n## Usage\n\n```sh\ngadget {title}\n```\n\n"
    "- one option\n- another option\n"
)


def _md_site(root: Path, names: list[str], robots: str) -> Path:
    (root / "docs").mkdir(parents=True)
    (root / "robots.txt").write_text(robots)
    links = "\n".join(f"- [{n}]({n}.md): about {n}" for n in names)
    (root / "docs" / "llms.txt").write_text(f"# Gadget\n\n> Gadget docs.\n\n## Docs\n\n{links}\n")
    for name in names:
        (root / "docs" / f"{name}.md").write_text(PAGE.format(title=name))
    return root


def test_crawl_delay_spaces_requests(crawl, tmp_path: Path) -> None:
    site = SiteServer(_md_site(tmp_path / "site", ["alpha", "beta", "gamma"], "User-agent: *\nCrawl-delay: 2\n"))
    try:
        # AutoThrottle on, as by default: it must not bring the Crawl-delay down to the loopback's latency.
        result = crawl("docs", url=site.url + "docs/", graph="delayed",
                       settings={**FAST, "AUTOTHROTTLE_ENABLED": "True"})
    finally:
        site.stop()
    assert result.returncode == 0, result.log[-3000:]
    assert len(result.sources["pages"]) == 3
    assert result.stats["skillgraph/politeness/crawl_delay"] == 1
    assert "Crawl-delay of 127.0.0.1: 2.0 s between requests" in result.log
    times = [t for t, path, _ in site.requests if path != "/robots.txt"]
    assert len(times) >= 5  # llms-full.txt, llms.txt, three pages
    gaps = [b - a for a, b in pairwise(times)]
    # DOWNLOAD_DELAY is 0 in tests: only Crawl-delay spaces them. Times are taken server-side, when a
    # handler thread runs: on a loaded machine one stamp can lag, so the bound on each gap has slack.
    assert statistics.median(gaps) >= 1.95, gaps
    assert min(gaps) >= 1.5, gaps


def test_retry_after_robots_and_user_agent(crawl, tmp_path: Path) -> None:
    root = _md_site(tmp_path / "site", ["busy", "calm", "private"],
                    "User-agent: skillgraph\nDisallow: /docs/private.md\n\nUser-agent: *\nAllow: /\n")
    busy_calls = {"n": 0}

    def busy(sock: Any, path: str) -> None:
        busy_calls["n"] += 1
        if busy_calls["n"] == 1:
            body = b"slow down"
            sock.sendall(b"HTTP/1.1 429 Too Many Requests\r\nConnection: close\r\nRetry-After: 2\r\n"
                         b"Content-Length: 9\r\n\r\n" + body)
        else:
            page((root / "docs" / "busy.md").read_bytes(), "text/markdown; charset=utf-8")(sock, path)

    routes: dict[str, Send] = {f"/{p.relative_to(root)}": page(p.read_bytes(), "text/markdown; charset=utf-8"
                                                                if p.suffix == ".md" else "text/plain")
                               for p in root.rglob("*") if p.is_file()}
    routes["/docs/busy.md"] = busy
    server = RawServer(routes)
    try:
        result = crawl("docs", url=server.url + "docs/", graph="polite", settings={
            **FAST, "SKILLGRAPH_SSRF_ALLOWLIST": f"127.0.0.1:{server.port}"})
    finally:
        server.stop()
    assert result.returncode == 0, result.log[-3000:]
    urls = {p["url"].rsplit("/", 1)[-1] for p in result.sources["pages"]}
    assert urls == {"busy.md", "calm.md"}, "busy.md came on the retry; private.md is disallowed for skillgraph"
    assert "/docs/private.md" not in server.paths
    assert result.stats["robotstxt/forbidden"] >= 1
    assert result.stats["skillgraph/politeness/retry_after"] == 1
    assert f"127.0.0.1:{server.port} answered 429 with Retry-After: waiting 2.0 s" in result.log
    busy_times = [t for t, p in zip(server.times, server.paths, strict=True) if p == "/docs/busy.md"]
    assert len(busy_times) == 2 and busy_times[1] - busy_times[0] >= 1.9
    agents = set(server.agents)
    assert agents == {user_agent(CONTACT)}
    assert "skillgraph/" in user_agent(CONTACT) and f"+{CONTACT}" in user_agent(CONTACT)


def test_parse_retry_after() -> None:
    now = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    assert parse_retry_after("120") == 120.0
    later = format_datetime(now + timedelta(seconds=30), usegmt=True)
    assert parse_retry_after(later, now=now.timestamp()) == pytest.approx(30.0)
    assert parse_retry_after(format_datetime(now - timedelta(seconds=30), usegmt=True), now=now.timestamp()) == 0.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after("") is None
