"""The page budget counts documents the graph will hold: a repeated URL or repeated content is free."""

from __future__ import annotations

import asyncio

from scrapy.utils.test import get_crawler

from skillgraph.items import DocumentItem
from skillgraph.pipelines.page_budget import PageBudgetPipeline


def doc(url: str, markdown: str, strategy: str = "crawl") -> DocumentItem:
    return DocumentItem(url=url, title=None, markdown=markdown, fetched_at="2026-11-29T12:00:00Z", source=url,
                        domain="s", strategy=strategy, tier="html")


def test_duplicates_do_not_spend_the_budget() -> None:
    crawler = get_crawler(settings_dict={"SKILLGRAPH_MAX_PAGES": 3})
    crawler.stats.open_spider()
    budget = PageBudgetPipeline.from_crawler(crawler)
    items = [
        doc("http://s/docs/", "# Home\n"),
        doc("http://s/docs/index.html", "# Home\n"),  # the same page under a second URL
        doc("http://s/docs/a.html", "# A\n"),
        doc("http://s/docs/a.html", "# A, fetched again\n"),  # the same URL
        doc("http://s/llms-full.txt#x", "# X\n", strategy="llms-full"),  # a corpus is not bounded
        doc("http://s/docs/b.html", "# B\n"),
    ]
    for item in items:
        assert asyncio.run(budget.process_item(item)) is item
    assert budget.count == 3, "three distinct pages: the bound is reached, not passed"
    assert crawler.stats.get_value("skillgraph/page_budget/not_counted_duplicate") == 2
    assert crawler.stats.get_value("skillgraph/page_budget/dropped") is None
