"""Sitemap and robots.txt helpers for the profiler.

Parsing is Scrapy's (``scrapy.utils.sitemap.Sitemap``: lxml with entities and
network access off) and robots.txt is protego's; this module only adds what
they leave to ``SitemapSpider``: gzip detection with a size cap, a BOM-tolerant
XML sniff, and resolution of relative ``Sitemap:`` lines (seen on real wikis).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from urllib.parse import urljoin

from protego import Protego
from scrapy.utils.gz import gunzip
from scrapy.utils.sitemap import Sitemap

logger = logging.getLogger(__name__)


class SitemapError(ValueError):
    """The body is not a usable sitemap (not XML, too large once unpacked, ...)."""


@dataclass
class ParsedSitemap:
    kind: str  # "urlset" or "sitemapindex"
    locs: list[str] = field(default_factory=list)


def sitemap_xml(body: bytes, max_size: int) -> bytes:
    """The XML bytes of a sitemap body, gunzipped when it is gzip (capped at ``max_size``)."""
    if body[:2] == b"\x1f\x8b":
        try:
            body = gunzip(body, max_size=max_size)
        except Exception as exc:  # DecompressionMaxSizeExceeded, OSError, EOFError
            raise SitemapError(f"bad gzip: {exc}") from exc
    head = body.lstrip(b"\xef\xbb\xbf \t\r\n")[:512].lower()
    if not head.startswith(b"<") or b"<html" in head or b"<!doctype html" in head:
        raise SitemapError("not XML")
    return body.lstrip(b"\xef\xbb\xbf \t\r\n")


def parse_sitemap(body: bytes, max_size: int = 50 * 1024 * 1024) -> ParsedSitemap:
    """Parse a sitemap or sitemap index; raises :class:`SitemapError` when it is neither."""
    xml = sitemap_xml(body, max_size)
    try:
        sitemap = Sitemap(xml)
    except Exception as exc:  # lxml errors on broken XML
        raise SitemapError(f"bad XML: {exc}") from exc
    if sitemap.type not in ("urlset", "sitemapindex"):
        raise SitemapError(f"root element is {sitemap.type!r}")
    locs = []
    for entry in sitemap:
        loc = (entry.get("loc") or "").strip()
        if loc:
            locs.append(loc)
    return ParsedSitemap(sitemap.type, locs)


def robots_sitemaps(body: bytes, robots_url: str) -> list[str]:
    """``Sitemap:`` URLs of a robots.txt, relative ones resolved against it."""
    text = body.decode("utf-8", errors="replace").lstrip("\ufeff")
    try:
        lines = list(Protego.parse(text).sitemaps)
    except Exception:
        logger.debug("protego could not parse %s", robots_url, exc_info=True)
        lines = []
    return [urljoin(robots_url, line.strip()) for line in lines if line.strip()]
