"""Per-request overhead of the safety layer: SSRF guard (middleware + guarded resolver),
politeness and limits middlewares, against the same crawl with them off.

Both sides are the same lean Scrapy crawl (fetch + follow links, robots.txt on, no
extraction, so the layer's cost is not drowned by skillgraph's own work) of the
real Python 3.11 docs (Debian ``python3.11-doc``) on loopback, same pages, same
concurrency. Rounds alternate on/off; the figure is the ratio of median CPU time
per request of the crawl process (CPU time, not wall time: the machine is shared).
A micro-benchmark of the decision itself (public address, the path a real site
takes; loopback mirrors exit early on the allowlist) is printed alongside.

    .venv/bin/python bench/safety.py [--rounds 3] [--pages 600]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import statistics
import subprocess
import sys
import timeit
from pathlib import Path
from typing import Any

from loopback import serve_directory  # bench/loopback.py (scripts run with bench/ on sys.path)

ROOT = Path(__file__).resolve().parent.parent
DOCS = Path("/usr/share/doc/python3.11/html")
SAFETY = {
    "skillgraph.middlewares.ssrf.SSRFMiddleware": 950,
    "skillgraph.middlewares.politeness.PolitenessMiddleware": 560,
    "skillgraph.safety.limits.RedirectLimitMiddleware": 605,
    "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware": None,
    "skillgraph.safety.limits.BoundedHttpCompressionMiddleware": 590,
}




def child(mode: str, url: str, pages: int, allow: str) -> None:
    """One crawl in this process; prints pages, requests and CPU seconds as JSON."""
    sys.path.insert(0, str(ROOT))
    from scrapy import signals
    from scrapy.crawler import CrawlerProcess

    sys.path.insert(0, str(ROOT / "bench"))
    from plain_crawl import PlainSpider

    settings: dict[str, Any] = {
        "LOG_LEVEL": "WARNING", "ROBOTSTXT_OBEY": True, "DOWNLOAD_DELAY": 0, "TELNETCONSOLE_ENABLED": False,
        "REMOTE_CONTROL_ENABLED": False, "CONCURRENT_REQUESTS_PER_DOMAIN": 16, "COOKIES_ENABLED": False,
        "CLOSESPIDER_PAGECOUNT": pages,
    }
    if mode == "on":
        settings.update(DOWNLOADER_MIDDLEWARES=SAFETY, SKILLGRAPH_SSRF_ALLOWLIST=allow)
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(PlainSpider)
    marks: list[resource.struct_rusage] = []  # CPU at spider open and close: the crawl alone, not start-up
    def mark() -> None:
        marks.append(resource.getrusage(resource.RUSAGE_SELF))

    crawler.signals.connect(mark, signals.spider_opened)  # a strong reference: signals hold receivers weakly
    crawler.signals.connect(mark, signals.spider_closed)
    process.crawl(crawler, url=url)
    process.start()
    before, after = marks
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    stats = crawler.stats
    assert stats is not None
    if mode == "on":
        assert stats.get_value("skillgraph/ssrf/refused") is None, "the guard refused the bench site"
    print(json.dumps({"pages": crawler.spider.pages, "requests": stats.get_value("downloader/request_count"),
                      "cpu": cpu, "seconds": stats.get_value("elapsed_time_seconds")}))


def run(mode: str, url: str, pages: int, allow: str) -> dict[str, float]:
    out = subprocess.run([sys.executable, __file__, "--child", mode, url, str(pages), allow],
                         cwd="/", capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def decision_micro() -> dict[str, float]:
    sys.path.insert(0, str(ROOT))
    from skillgraph.safety.ssrf import decide, parse_allowlist

    allow = parse_allowlist(["127.0.0.1:8000"])
    n = 20000
    public = timeit.timeit(lambda: decide("docs.example.org", 443, ["93.184.216.34", "2606:4700::1"], allow),
                           number=n) / n
    allowed = timeit.timeit(lambda: decide("127.0.0.1", 8000, ["127.0.0.1"], allow), number=n) / n
    return {"decide_public_us": public * 1e6, "decide_allowlisted_us": allowed * 1e6}


def middleware_micro(allow: str) -> float:
    """Microseconds the layer's middlewares add to one request and its response, called directly."""
    sys.path.insert(0, str(ROOT))
    from scrapy import Request, Spider
    from scrapy.http import HtmlResponse
    from scrapy.utils.misc import build_from_crawler
    from scrapy.utils.test import get_crawler

    from skillgraph.middlewares.politeness import PolitenessMiddleware
    from skillgraph.middlewares.ssrf import SSRFMiddleware
    from skillgraph.safety.limits import RedirectLimitMiddleware

    crawler = get_crawler(Spider, {"SKILLGRAPH_SSRF_ALLOWLIST": allow})
    ssrf, polite, redirects = (build_from_crawler(c, crawler) for c in
                               (SSRFMiddleware, PolitenessMiddleware, RedirectLimitMiddleware))
    urls = [f"http://{allow}/library/page{i}.html" for i in range(1000)]
    requests = [Request(u) for u in urls]
    responses = [HtmlResponse(u, body=b"<html></html>", request=r) for u, r in zip(urls, requests, strict=True)]

    def one_pass() -> None:
        for request, response in zip(requests, responses, strict=True):
            ssrf.process_request(request)
            redirects.process_response(request, response)
            coro = polite.process_response(request, response)
            with contextlib.suppress(StopIteration):  # returns at once for a 200: no await
                coro.send(None)

    return min(timeit.repeat(one_pass, number=1, repeat=5)) / len(requests) * 1e6


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pages", type=int, default=600)
    args = parser.parse_args()
    if not (DOCS / "index.html").exists():
        print(f"{DOCS} missing: install Debian's python3.11-doc", file=sys.stderr)
        return 2
    server = serve_directory(DOCS)
    port = server.server_address[1]
    url, allow = f"http://127.0.0.1:{port}/library/index.html", f"127.0.0.1:{port}"
    per_request: dict[str, list[float]] = {"off": [], "on": []}
    try:
        for round_no in range(args.rounds):
            for mode in ("off", "on") if round_no % 2 == 0 else ("on", "off"):
                result = run(mode, url, args.pages, allow)
                per_request[mode].append(result["cpu"] / result["requests"])
                print(f"round {round_no + 1} {mode:>3}: {result['requests']} requests, {result['pages']} pages, "
                      f"{result['cpu']:.2f} s CPU, {result['cpu'] / result['requests'] * 1e3:.3f} ms CPU/request")
    finally:
        server.shutdown()
    off, on = statistics.median(per_request["off"]), statistics.median(per_request["on"])
    micro = decision_micro()
    layer_us = middleware_micro(allow)
    print(f"median CPU per request: off {off * 1e3:.3f} ms, on {on * 1e3:.3f} ms, "
          f"overhead {(on - off) * 1e6:.0f} us")
    print(f"decide(): public name {micro['decide_public_us']:.1f} us, "
          f"allowlisted {micro['decide_allowlisted_us']:.1f} us")
    print(f"middlewares called directly: {layer_us:.1f} us per request and response "
          f"= {layer_us / (off * 1e6):.2%} of the lean crawl's CPU per request")
    print(f"ratio on/off (CPU per request): {on / off:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
