"""StrategyMiddleware: a plain ``scrapy.Spider`` that enables it gets the whole strategy ladder.

The spider below is not a SkillgraphSpider: it declares ``start_urls`` and lists the
middleware in ``custom_settings``, nothing else. Run with ``scrapy runspider`` in the
project (the add-on applies), it must build a graph exactly as ``scrapy crawl docs``
would: the profile picks the strategy, pages go through the tier ladder and the
quality gates, every URL is accounted for in ``sources.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import TEST_SETTINGS, run_scrapy
from tests.servers import SiteServer

PLAIN_SPIDER = '''
import scrapy


class PlainDocs(scrapy.Spider):
    name = "plain_docs"
    start_urls = [{url!r}]
    custom_settings = {{"SPIDER_MIDDLEWARES": {{"skillgraph.middlewares.strategy.StrategyMiddleware": 800}}}}
'''


def run_plain(tmp_path: Path, url: str) -> tuple[int, str, dict, dict]:
    spider = tmp_path / "plain_docs.py"
    spider.write_text(PLAIN_SPIDER.format(url=url))
    settings = {**TEST_SETTINGS, "SKILLGRAPH_GRAPHS_DIR": str(tmp_path / "graphs"),
                "SKILLGRAPH_STATS_FILE": str(tmp_path / "stats.json"), "SKILLGRAPH_ITEMS_DIR": str(tmp_path / "items"),
                "SKILLGRAPH_STATE_PATH": str(tmp_path / "state.sqlite3"), "SKILLGRAPH_RENDER_ENABLED": "False"}
    args = ["runspider", str(spider)]
    for key, value in settings.items():
        args += ["-s", f"{key}={value}"]
    proc = run_scrapy(args, timeout=120)
    stats = json.loads((tmp_path / "stats.json").read_text())
    sources_path = tmp_path / "graphs" / "plain_docs" / "sources.json"
    sources = json.loads(sources_path.read_text()) if sources_path.exists() else {}
    return proc.returncode, proc.stderr, stats, sources


def test_plain_spider_crawls_a_site_through_the_ladder(tmp_path: Path, sites: dict[str, SiteServer]) -> None:
    site = sites["crawl_site"]
    code, log, stats, sources = run_plain(tmp_path, site.url + "docs/")
    assert code == 0, log[-3000:]
    assert "NotImplementedError" not in log, "the start URL never reached Spider.parse"
    assert sources["scrape_profile"]["strategy"] == "crawl"
    pages = sources["pages"]
    assert len(pages) == stats["skillgraph/graph/pages"] >= 6, "the start page and the guides it links to"
    assert {p["tier"] for p in pages} <= {"html", "best-effort"}
    graph = tmp_path / "graphs" / "plain_docs"
    assert all((graph / p["file"]).read_text().startswith("#") or p["tier"] == "best-effort" for p in pages)
    assert stats["skillgraph/profiler/probes"] >= 3, "llms-full, llms.txt and sitemap probed first"
    assert (graph / "llms.txt").read_text().startswith("# plain_docs"), "the graph is named after the spider"


def test_plain_spider_takes_an_llms_full_corpus(tmp_path: Path, sites: dict[str, SiteServer]) -> None:
    site = sites["llms_scoped"]
    code, log, _, sources = run_plain(tmp_path, site.url + "docs/")
    assert code == 0, log[-3000:]
    assert sources["scrape_profile"]["strategy"] == "llms-full"
    assert sources["scrape_profile"]["source"] == site.url + "docs/llms-full.txt"
    assert len(sources["pages"]) >= 5 and {p["tier"] for p in sources["pages"]} == {"corpus"}
