"""MediaWiki enumeration: ``scrapy crawl arch_wiki`` (API) against plain Scrapy fetching the same pages.

Both run against the real test MediaWiki of tests/wiki.py (Debian ``mediawiki``
on SQLite, ``php -S`` with two workers, ~310 content pages) with the same
concurrency and no delay. The spider enumerates ``list=allpages`` and fetches
``action=parse`` per title, then extracts and writes the graph; the baseline
only downloads each rendered article (``/wiki/Title``, the URLs taken from the
manifest). One unmeasured warm-up pass fills the wiki's parser cache; the
rounds then alternate. The figure is the ratio of median pages/s.

    .venv/bin/python bench/mediawiki.py [--rounds 2] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from skillgraph.strategy.mediawiki import article_url  # noqa: E402
from tests.wiki import start_wiki, stop_wiki  # noqa: E402

PLAIN = """
import json, sys, time
from scrapy import Spider
from scrapy.crawler import CrawlerProcess
class Plain(Spider):
    name = "plain"
    pages = 0
    def parse(self, response):
        self.pages += 1
urls, concurrency = json.load(open(sys.argv[1])), int(sys.argv[2])
process = CrawlerProcess({"LOG_LEVEL": "WARNING", "DOWNLOAD_DELAY": 0, "ROBOTSTXT_OBEY": True,
                          "CONCURRENT_REQUESTS_PER_DOMAIN": concurrency, "TELNETCONSOLE_ENABLED": False})
crawler = process.create_crawler(Plain)
process.crawl(crawler, start_urls=urls)
process.start()
print(json.dumps({"pages": crawler.spider.pages, "seconds": crawler.stats.get_value("elapsed_time_seconds")}))
"""


def plain(urls_file: Path, concurrency: int) -> tuple[int, float]:
    out = subprocess.run([sys.executable, "-c", PLAIN, str(urls_file), str(concurrency)], cwd=ROOT,
                         capture_output=True, text=True, check=True, timeout=900)
    data = json.loads(out.stdout.strip().splitlines()[-1])
    return data["pages"], data["seconds"]


def spider(url: str, tmp: Path, concurrency: int, n: int) -> tuple[int, float]:
    stats = tmp / f"stats-{n}.json"
    args = [sys.executable, "-m", "scrapy", "crawl", "arch_wiki", "-a", f"base_url={url}/"]
    for setting in (f"SKILLGRAPH_GRAPHS_DIR={tmp / f'graphs-{n}'}", f"SKILLGRAPH_STATS_FILE={stats}",
                    f"SKILLGRAPH_ITEMS_DIR={tmp / f'items-{n}'}", f"SKILLGRAPH_STATE_PATH={tmp / f'state-{n}'}",
                    f"SKILLGRAPH_SSRF_ALLOWLIST={url.removeprefix('http://')}", "DOWNLOAD_DELAY=0",
                    f"CONCURRENT_REQUESTS_PER_DOMAIN={concurrency}", "SKILLGRAPH_RENDER_ENABLED=False",
                    "LOG_LEVEL=WARNING"):
        args += ["-s", setting]
    subprocess.run(args, cwd=ROOT, capture_output=True, check=True, timeout=900)
    data = json.loads(stats.read_text())
    return data["skillgraph/graph/pages"], data["elapsed_time_seconds"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=8)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        wiki = start_wiki(tmp / "wiki")
        url = wiki.url
        try:
            titles = wiki.manifest["ns0_content"]
            urls_file = tmp / "urls.json"
            urls_file.write_text(json.dumps([article_url(url + "/wiki/$1", t) for t in titles]))
            plain(urls_file, opts.concurrency)  # warm-up: parser cache
            rates: dict[str, list[float]] = {"api": [], "plain": []}
            for n in range(opts.rounds):
                for kind in ("api", "plain"):
                    pages, seconds = (spider(url, tmp, opts.concurrency, n) if kind == "api"
                                      else plain(urls_file, opts.concurrency))
                    rates[kind].append(pages / seconds)
                    print(f"{kind:5}: {pages} pages in {seconds:.1f} s = {pages / seconds:.1f} pages/s")
        finally:
            stop_wiki(wiki)
    api, base = statistics.median(rates["api"]), statistics.median(rates["plain"])
    print(f"median: enumeration + parse + extraction + graph {api:.1f} pages/s, plain fetch {base:.1f} pages/s; "
          f"ratio {api / base:.2f}")


if __name__ == "__main__":
    main()
