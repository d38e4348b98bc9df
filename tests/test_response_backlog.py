"""ResponseBacklog: responses waiting for their page's work bounded in number as well as in bytes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from scrapy import Request, Spider
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from scrapy.utils.test import get_crawler

from skillgraph.compat.scrapy import ScraperSlot as Slot
from skillgraph.extensions.response_backlog import ResponseBacklog, bound_in_number
from tests.servers import SiteServer

MB = 1024 * 1024


def held(slot: Slot, sizes: list[int]) -> list[tuple[Response, Request]]:
    """Responses of these body sizes handed to the scraper's slot, as the engine hands them."""
    pairs: list[tuple[Response, Request]] = []
    for size in sizes:
        request = Request(f"http://docs.test/{len(pairs)}")
        response = Response(request.url, body=b"x" * size, request=request)
        slot.add_response_request(response, request)
        pairs.append((response, request))
    return pairs


def test_small_responses_are_bounded_in_number_and_big_ones_still_in_bytes() -> None:
    slot = Slot(16 * MB)  # Scrapy's own slot: only its per-response minimum changes
    assert bound_in_number(slot, 16 * MB, 64) == 64
    held(slot, [4096] * 64)
    assert not slot.needs_backout(), "64 small pages wait: the engine still pulls the next request"
    held(slot, [4096])
    assert slot.needs_backout(), "the 65th holds the engine: 65 x 4 kB is far under 16 MB of bodies"

    slot = Slot(16 * MB)
    bound_in_number(slot, 16 * MB, 64)
    giants = held(slot, [int(2.5 * MB), int(1.7 * MB)])  # the Python docs' contents.html and genindex-all.html
    assert not slot.needs_backout(), "a 2.5 MB page no longer fills the bound alone (it did at 1 MB)"
    held(slot, [15 * MB])
    assert slot.needs_backout(), "bodies still add up to the bound in bytes"
    for response, request in giants:
        slot.next_response_request_deferred()
        slot.finish_response(response, request)
    assert slot.active_size == 15 * MB, "counted out as counted in: no drift"


def test_the_minimum_never_goes_below_scrapys() -> None:
    slot = Slot(1000)
    assert bound_in_number(slot, 1000, 64) == 0  # 1000 // 1024: Scrapy's own 1 kB minimum kept
    assert slot.MIN_RESPONSE_SIZE == Slot.MIN_RESPONSE_SIZE


def test_off_when_the_backlog_is_zero() -> None:
    crawler = get_crawler(Spider, {"SKILLGRAPH_RESPONSE_BACKLOG": 0})
    with pytest.raises(NotConfigured):
        ResponseBacklog.from_crawler(crawler)


def test_a_crawl_faster_than_its_page_work_holds_at_most_the_backlog(python_docs: SiteServer, crawl: Any,
                                                                     tmp_path: Path) -> None:
    """Loopback answers ~4x faster than two cores evaluate the pages: without the bound in number, 16 MB
    of these ~50 kB pages would let ~300 wait. Every page is still written: the hold never stalls."""
    result = crawl("docs", url=python_docs.url + "library/index.html", graph="library", settings={
        "SKILLGRAPH_RESPONSE_BACKLOG": 4, "SKILLGRAPH_RENDER_ENABLED": False, "SKILLGRAPH_MAX_PAGES": 120})
    assert result.returncode == 0, result.log[-2000:]
    assert result.stats["skillgraph/backlog/responses"] == 4
    assert result.stats["skillgraph/graph/pages"] == 120 and len(result.markdown_files()) >= 119
    # the bound, plus the downloads already in flight when it was reached (CONCURRENT_REQUESTS_PER_DOMAIN 16)
    assert 4 <= result.stats["skillgraph/backlog/max_waiting"] <= 4 + 16 + 1
