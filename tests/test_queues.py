"""The scheduler's compact memory queues: order, what a request keeps, the unserialisable, the memory saved."""

from __future__ import annotations

import tracemalloc
from typing import Any

import pytest
from scrapy import Request, Spider
from scrapy.squeues import FifoMemoryQueue
from scrapy.utils.test import get_crawler

from skillgraph.addon import POLITE
from skillgraph.build.queues import CompactFifoMemoryQueue, CompactLifoMemoryQueue


class DocsLikeSpider(Spider):
    name = "queues"

    def page(self, response: Any, link: str = "") -> None: ...

    def failed(self, failure: Any) -> None: ...


@pytest.fixture()
def crawler() -> Any:
    crawler = get_crawler(DocsLikeSpider)
    crawler.spider = DocsLikeSpider.from_crawler(crawler)
    return crawler


def request(spider: DocsLikeSpider, n: int) -> Request:
    return Request(f"http://docs.test/library/page{n}.html", callback=spider.page, errback=spider.failed,
                   cb_kwargs={"link": f"http://docs.test/library/page{n}.html"}, priority=-n % 3,
                   headers={"Accept": "text/html"},
                   meta={"depth": 2, "skillgraph_tier": "html", "skillgraph_attempts": [{"tier": "html", "why": "x"}]})


def test_fifo_and_lifo_order_and_everything_a_request_carries(crawler: Any) -> None:
    spider = crawler.spider
    fifo, lifo = CompactFifoMemoryQueue.from_crawler(crawler), CompactLifoMemoryQueue.from_crawler(crawler)
    for n in range(5):
        fifo.push(request(spider, n))
        lifo.push(request(spider, n))
    assert len(fifo) == len(lifo) == 5
    peeked = fifo.peek()
    assert peeked is not None and peeked.url.endswith("page0.html") and len(fifo) == 5
    firsts = [fifo.pop() for _ in range(5)]
    lasts = [lifo.pop() for _ in range(5)]
    assert [r.url[-10:] for r in firsts if r] == [f"page{n}.html" for n in range(5)]
    assert [r.url[-10:] for r in lasts if r] == [f"page{n}.html" for n in reversed(range(5))]
    assert fifo.pop() is None and fifo.peek() is None and len(fifo) == 0
    restored = firsts[3]
    assert restored is not None
    assert restored.callback == spider.page and restored.errback == spider.failed
    assert restored.cb_kwargs == {"link": "http://docs.test/library/page3.html"}
    assert restored.meta["skillgraph_attempts"] == [{"tier": "html", "why": "x"}] and restored.meta["depth"] == 2
    assert restored.priority == request(spider, 3).priority and restored.headers["Accept"] == b"text/html"
    fifo.close()


def test_an_unserialisable_request_is_kept_as_it_is_and_counted(crawler: Any) -> None:
    queue = CompactFifoMemoryQueue.from_crawler(crawler)
    odd = Request("http://docs.test/odd.html", callback=lambda response: None)  # no spider method: no to_dict
    queue.push(request(crawler.spider, 1))
    queue.push(odd)
    assert queue.pop() is not odd
    assert queue.pop() is odd
    assert crawler.stats.get_value("skillgraph/frontier/unserializable") == 1


def test_a_waiting_request_costs_a_fraction_of_the_live_object(crawler: Any) -> None:
    def held(queue: Any) -> int:
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        for n in range(2000):
            queue.push(request(crawler.spider, n))
        size = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        assert len(queue) == 2000
        return size

    plain, compact = held(FifoMemoryQueue.from_crawler(crawler)), held(CompactFifoMemoryQueue.from_crawler(crawler))
    assert compact < plain / 3, (compact, plain)


def test_skillgraph_crawls_queue_compactly_by_default() -> None:
    assert POLITE["SCHEDULER_MEMORY_QUEUE"] == "skillgraph.build.queues.CompactFifoMemoryQueue"


def test_request_dict_is_to_dict_with_the_names_remembered(crawler: Any) -> None:
    from types import MethodType

    from scrapy.http import FormRequest

    from skillgraph.build.queues import request_dict

    spider = crawler.spider
    names: dict[Any, str] = {}
    requests = [request(spider, 1), request(spider, 2), Request("http://docs.test/plain.html"),
                FormRequest("http://docs.test/form", formdata={"q": "x"}, callback=spider.page)]
    for req in requests:
        assert request_dict(req, spider, names) == req.to_dict(spider=spider)
    assert set(names.values()) == {"page", "failed"}, "learnt from to_dict, then used"
    # a name that no longer points at the function (rebound on the instance) is asked again, not trusted
    spider.page = MethodType(lambda self, response: None, spider)
    with pytest.raises(ValueError):
        request_dict(Request("http://docs.test/x", callback=DocsLikeSpider.page.__get__(spider)), spider, names)
