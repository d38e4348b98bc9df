"""Sitemap and robots.txt helpers against every real file in shared/corpus."""

from __future__ import annotations

import gzip

import pytest

from skillgraph.strategy.sitemaps import SitemapError, parse_sitemap, robots_sitemaps
from tests.conftest import CORPUS, requires_corpus

SITEMAPS = sorted((CORPUS / "sitemap").glob("*"))
ROBOTS = sorted((CORPUS / "robots").glob("*"))


@requires_corpus
@pytest.mark.parametrize("path", SITEMAPS, ids=lambda p: p.name)
def test_every_corpus_sitemap_parses(path) -> None:
    parsed = parse_sitemap(path.read_bytes())
    assert parsed.kind in ("urlset", "sitemapindex")
    assert parsed.locs and all(loc.startswith("http") for loc in parsed.locs)


@requires_corpus
def test_gzip_and_bom() -> None:
    body = (CORPUS / "sitemap/2059ventures__small_sitemap.xml").read_bytes()
    assert body.startswith(b"\xef\xbb\xbf")
    assert parse_sitemap(gzip.compress(body)).locs == parse_sitemap(body).locs


def test_gzip_past_the_cap_is_refused() -> None:
    with pytest.raises(SitemapError):
        parse_sitemap(gzip.compress(b"<urlset>" + b" " * 2_000_000 + b"</urlset>"), max_size=1_000_000)


@pytest.mark.parametrize("body", [b"<!doctype html><html></html>", b"plain text", b"\x1f\x8bnot gzip", b"<feed/>"])
def test_not_a_sitemap(body: bytes) -> None:
    with pytest.raises(SitemapError):
        parse_sitemap(body)


@requires_corpus
@pytest.mark.parametrize("path", ROBOTS, ids=lambda p: p.name)
def test_every_corpus_robots_parses(path) -> None:
    for url in robots_sitemaps(path.read_bytes(), "https://example.org/robots.txt"):
        assert url.startswith("https://")


@requires_corpus
def test_relative_sitemap_line_is_resolved() -> None:
    urls = robots_sitemaps((CORPUS / "robots/ballotpedia.org.robots.txt").read_bytes(), "https://ballotpedia.org/robots.txt")
    assert urls == ["https://ballotpedia.org/wiki/sitemap/sitemap-index-ballotpedia.xml"]
