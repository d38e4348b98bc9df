"""HeadMetaRefreshMiddleware: Scrapy's meta-refresh decisions, without decoding pages that have none."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from scrapy import Request, Spider
from scrapy.downloadermiddlewares.redirect import MetaRefreshMiddleware
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler

from skillgraph.middlewares.metarefresh import HeadMetaRefreshMiddleware, may_refresh
from tests.conftest import CORPUS, PYTHON_DOCS

FIXTURES = Path(__file__).parent / "fixtures"
REFRESH = b'<html><head><meta http-equiv="Refresh" content="0; url=/docs/new.html"></head><body>moved</body></html>'


def decision(middleware: Any, url: str, body: bytes) -> str:
    response = HtmlResponse(url, body=body, request=Request(url))
    result = middleware.process_response(response.request, response)
    return f"redirect {result.url}" if isinstance(result, Request) else "response"


def middlewares() -> tuple[Any, Any]:
    crawler = get_crawler(Spider)
    return HeadMetaRefreshMiddleware.from_crawler(crawler), MetaRefreshMiddleware.from_crawler(crawler)


def test_only_pages_that_may_hold_a_refresh_are_decoded() -> None:
    assert may_refresh(REFRESH)
    assert not may_refresh(b"<html><head><title>Guide</title></head><body><p>text</p></body></html>")
    assert may_refresh(REFRESH.decode().encode("utf-16"))  # the BOM and NUL bytes: Scrapy decides
    assert may_refresh(REFRESH.decode().encode("utf-16-le"))
    late = b"<html><head></head><body>" + b"x" * 40_000 + b'<meta http-equiv="refresh" content="0; url=/a"></body>'
    assert not may_refresh(late)  # past the 4,096 characters Scrapy reads: Scrapy ignores it too


@pytest.mark.parametrize("body", [REFRESH, REFRESH.replace(b"0;", b"3600;"), REFRESH.decode().encode("utf-16")])
def test_refresh_pages_get_scrapys_own_answer(body: bytes) -> None:
    ours, scrapys = middlewares()
    url = "http://docs.test/docs/old.html"
    assert decision(ours, url, body) == decision(scrapys, url, body)
    assert ours.crawler.stats.get_value("skillgraph/metarefresh/decoded") == 1


def test_same_decisions_as_scrapy_on_real_pages() -> None:
    ours, scrapys = middlewares()
    pages = sorted(PYTHON_DOCS.glob("library/[a-c]*.html")) + sorted(FIXTURES.glob("quality/*.html")) \
        + sorted(CORPUS.glob("block_pages/*.html")) + sorted(FIXTURES.glob("extract/*.html"))
    assert len(pages) > 30
    decided = {}
    for page in pages:
        body = page.read_bytes()
        url = f"http://docs.test/{page.name}"
        decided[page.name] = decision(ours, url, body)
        assert decided[page.name] == decision(scrapys, url, body), page
    # Challenge pages refresh themselves (no URL: no redirect, as Scrapy decides); the docs are never decoded.
    assert 1 <= ours.crawler.stats.get_value("skillgraph/metarefresh/decoded") < len(pages) / 4
