"""HeadMetaRefreshMiddleware: Scrapy's meta-refresh redirects without decoding every page in the reactor.

Scrapy's ``MetaRefreshMiddleware`` reads ``response.text[0:4096]`` for every HTML
response: the whole body decoded (and its encoding sniffed) on the reactor thread,
~0.7 ms a page of the Python docs, and the decoded copy held beside the body
while the page waits for the page pool (bench/memory.py: +2 MB at a backlog of
500 pages). The page pool decodes the page anyway, in a worker.

A ``<meta http-equiv="refresh">`` in the first 4,096 characters has the bytes
``refresh`` in the first 16,384 bytes (4 bytes a character at most in UTF-8 and
the single-byte encodings an HTML page declares): a page without them is passed
on untouched; any other page, and every UTF-16/32 page (a BOM or NUL bytes), goes
through Scrapy's own code, so the redirects followed are exactly Scrapy's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.downloadermiddlewares.redirect import MetaRefreshMiddleware
from scrapy.http import HtmlResponse

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.http import Response

#: Bytes that hold the first 4,096 characters Scrapy looks at, in any ASCII-compatible encoding.
HEAD_BYTES = 4 * 4096


class HeadMetaRefreshMiddleware(MetaRefreshMiddleware):
    def process_response(self, request: Request, response: Response,
                         spider: Spider | None = None) -> Request | Response:
        if isinstance(response, HtmlResponse):
            if not may_refresh(response.body):
                return response
            self.crawler.stats.inc_value("skillgraph/metarefresh/decoded")
        return super().process_response(request, response)


def may_refresh(body: bytes) -> bool:
    """Could ``body`` hold a meta refresh in its first 4,096 characters? False only when surely not."""
    head = body[:HEAD_BYTES]
    if b"\x00" in head or head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return True  # UTF-16/32: the bytes of "refresh" are spread out; Scrapy decodes and decides
    return b"refresh" in head.lower()
