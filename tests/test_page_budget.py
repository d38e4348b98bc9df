"""The page budget counts documents the graph will hold: a repeated URL or repeated content is free."""

from __future__ import annotations

import asyncio

import pytest
from scrapy.utils.test import get_crawler

from skillgraph.build import Build
from skillgraph.items import DocumentItem
from skillgraph.middlewares.budget import STOPPING_AT_BOUND
from skillgraph.pipelines.page_budget import PageBudgetExhausted, PageBudgetPipeline
from skillgraph.signals import profile_detected
from skillgraph.strategy.profiler import SiteProfile


def doc(url: str, markdown: str, strategy: str = "crawl") -> DocumentItem:
    return DocumentItem(url=url, title=None, markdown=markdown, fetched_at="2026-11-29T12:00:00Z", source=url,
                        domain="s", strategy=strategy, tier="html")


def bounded_crawler(limit: int):  # type: ignore[no-untyped-def]
    crawler = get_crawler(settings_dict={"SKILLGRAPH_MAX_PAGES": limit})
    crawler.stats.open_spider()
    profile = SiteProfile("http://s/docs/", "crawl", "http://s/docs/", "http://s/docs/", "2026-11-29T12:00:00Z")
    budget = PageBudgetPipeline.from_crawler(crawler)
    crawler.signals.send_catch_log(profile_detected, profile=profile)
    return crawler, budget


def test_duplicates_do_not_spend_the_budget() -> None:
    crawler, budget = bounded_crawler(3)
    items = [
        doc("http://s/docs/", "# Home\n"),
        doc("http://s/docs/index.html", "# Home\n"),  # the same page under a second URL
        doc("http://s/docs/a.html", "# A\n"),
        doc("http://s/docs/a.html", "# A, fetched again\n"),  # the same URL
        doc("http://s/docs/b.html", "# B\n"),
    ]
    verdicts = [asyncio.run(budget.process_item(item)).meta["admission"] for item in items]
    assert verdicts == ["new", "same-content", "new", "same-url", "new"]
    assert Build.of(crawler).spent == 3, "three distinct pages: the bound is reached, not passed"
    assert crawler.stats.get_value("skillgraph/page_budget/not_counted_duplicate") == 2
    assert crawler.stats.get_value("skillgraph/page_budget/dropped") is None
    skipped = {e.url: e.reason for e in Build.of(crawler).skipped()}
    assert skipped == {"http://s/docs/index.html": "duplicate"}, "the duplicate is accounted for"


def test_over_budget_is_dropped_and_left_unreached() -> None:
    crawler, budget = bounded_crawler(1)
    build = Build.of(crawler)
    build.learn("http://s/docs/", "start")
    build.learn("http://s/docs/a.html", "link")
    asyncio.run(budget.process_item(doc("http://s/docs/", "# Home\n")))

    async def over() -> None:
        STOPPING_AT_BOUND.add(crawler)  # already stopping: no engine needed here, the drop is what is checked
        await budget.process_item(doc("http://s/docs/a.html", "# A\n"))

    with pytest.raises(PageBudgetExhausted):
        asyncio.run(over())
    assert crawler.stats.get_value("skillgraph/page_budget/dropped") == 1
    assert build.unreached() == ["http://s/docs/a.html"], "a page dropped at the bound is left for the next run"
