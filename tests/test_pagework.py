"""PageWork: each HTML page parsed, extracted, assessed, hashed and its links read once, in a process pool,
results handed back in the order pages arrived (issue 16)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from scrapy.http import HtmlResponse

from skillgraph.items import sha256_text
from skillgraph.page.pool import ArrivalOrder
from skillgraph.page.work import NOT_PAGES, PageJob, evaluate
from skillgraph.tiers.evaluate import page_attempt
from skillgraph.urls import join, page_key
from tests.conftest import PYTHON_DOCS
from tests.servers import SiteServer

SAMPLE = ["library/json.html", "library/functions.html", "library/stdtypes.html", "tutorial/index.html",
          "reference/datamodel.html", "library/re.html", "whatsnew/3.11.html", "glossary.html"]


def job_for(rel: str, scope: str = "http://docs.test/") -> tuple[PageJob, HtmlResponse]:
    body = (PYTHON_DOCS / rel).read_bytes()
    url = "http://docs.test/" + rel
    response = HtmlResponse(url, body=body, headers={"Content-Type": "text/html"})
    job = PageJob("html", url, body, response.encoding, {"Content-Type": "text/html"}, 200, "", 0.5, scope)
    return job, response


def test_evaluate_is_the_ladders_verdict_with_hash_and_links_once() -> None:
    for rel in SAMPLE:
        job, response = job_for(rel)
        result = evaluate(job)
        attempt, shell, code_blocks = page_attempt("html", response, 0.5)  # Scrapy's own tree, in process
        assert (result.attempt.markdown, result.attempt.title, result.attempt.score, result.attempt.passed) == \
            (attempt.markdown, attempt.title, attempt.score, attempt.passed), rel
        assert (result.code_blocks, result.shell.is_shell) == (code_blocks, shell.is_shell), rel
        assert result.sha256 == sha256_text(attempt.markdown), "hashed in the worker, once"
        assert result.attempt.html is None and result.attempt.assessment is not None, "no raw page travels on"
        links: list[str] = []
        for href in response.selector.root.xpath("//a/@href"):  # the plain way: join every href, drop fragments
            href = str(href).strip()
            if href and not href.startswith(("#", "mailto:", "javascript:", "tel:", "data:")):
                url = page_key(urljoin(response.url, href))
                if url not in links:
                    links.append(url)
        expected = [u for u in links if u.rsplit("/", 1)[-1].rsplit(".", 1)[-1].lower() not in NOT_PAGES]
        assert result.links + result.outside, rel
        assert [u for u in expected if u in set(result.links)] == result.links, "in the page's order"
        assert set(result.links) | set(result.outside) == set(expected) | (set(result.outside) & set(links))


def test_links_outside_the_scope_are_set_apart() -> None:
    result = evaluate(job_for("library/json.html", scope="http://docs.test/library/")[0])
    assert result.links and all(u.startswith("http://docs.test/library/") for u in result.links)
    assert "http://docs.test/tutorial/index.html" not in result.links
    assert any(u.startswith("http://docs.test/") and "/library/" not in u for u in result.outside)
    job, _ = job_for("library/json.html")
    job.links_scope = None
    assert evaluate(job).links == [], "a page that is not followed has its links left unread"


def test_a_framesets_frames_are_its_links() -> None:
    """Ant's manual and Groovydoc open with a frameset: its frames were no links, so a crawl from it wrote one page
    and never learned of the 222 behind it; the <noframes> text (raw to the parser) was written as escaped HTML."""
    body = (b'<html><head><title>Apache Ant User Manual</title></head><frameset cols="26%,74%"><frame src="toc.html"'
            b' name="navFrame"><frame src="cover.html" name="mainFrame"><noframes><h2>Apache Ant User Manual</h2>'
            b'<a href="toc.html">Table of Contents</a></noframes></frameset></html>')
    job = PageJob("html", "http://docs.test/manual/index.html", body, "utf-8", {"Content-Type": "text/html"}, 200, "",
                  0.5, "http://docs.test/manual/")
    result = evaluate(job)
    assert result.links == ["http://docs.test/manual/toc.html", "http://docs.test/manual/cover.html"]
    assert "&lt;" not in result.attempt.markdown and "<h2>" not in result.attempt.markdown


def test_join_keeps_urljoins_answers() -> None:
    base = "http://docs.test/library/json.html?x=1#top"
    for href in ("", "#a", "re.html", "re.html#re.sub", "../index.html#x", "/abs.html", "?q=2", "?q=2#f",
                 "//other.test/p#f", "https://e.test/a/../b.html#c", "./", "..", "a b.html#x y"):
        assert join(base, href) == urljoin(base, href), href


def test_join_gives_urljoins_answers_for_random_absolute_and_relative_references() -> None:
    """The joins that are skipped (plain absolute URLs) or cached give urljoin's answer, or its ValueError, whatever the
    base: 100,000 references made of what urljoin strips, splits or refuses, against bases good and bad."""
    import random

    from skillgraph.urls import _PLAIN_ABSOLUTE

    pieces = ["h", "H", "x.org", ":80", ":", "/", "//", "a", "..", ".", "?", "q=1", ";p", " ", "\t", "\n", "[::1]", "[",
              "]", "@", "%41", "\u00e9", "~", "+", "!", "\\", "\x00", "\x7f"]
    bases = ["http://h/a/b.html", "https://h/", "HTTP://H/x", "ftp://f/x", "", "http://[bad/x", "http://h/a?q#f",
             "file:///x", "//h/x", "http://h"]
    rng = random.Random(16)
    skipped = 0
    for _ in range(100_000):
        href = rng.choice(["http://", "https://", "http:/", "https:", "hTTp://", "h", "http://h/", "", "a/", "/", "//",
                           "http://h/a?", "http://h?"]) + \
            "".join(rng.choice(pieces) for _ in range(rng.randint(0, 7)))
        base = rng.choice(bases)
        answers = []
        for way in (urljoin, join):
            try:
                answers.append(way(base, href))
            except ValueError:
                answers.append("ValueError")
        assert answers[0] == answers[1], (base, href)
        skipped += bool(_PLAIN_ABSOLUTE(href))
    assert skipped > 5_000


def test_arrival_order_hands_results_back_in_the_order_pages_arrived() -> None:
    async def run() -> list[int]:
        order, seen = ArrivalOrder(), []

        async def page(ticket: int, delay: float, fails: bool) -> None:
            try:
                await asyncio.sleep(delay)  # the pool finishes pages in any order
                if fails:
                    raise RuntimeError("extraction failed")
                await order.turn(ticket)
                seen.append(ticket)
            except RuntimeError:
                pass
            finally:
                order.release(ticket)

        tickets = [order.ticket() for _ in range(6)]
        delays = [0.05, 0.0, 0.03, 0.01, 0.0, 0.02]
        await asyncio.gather(*(page(t, d, t == 2) for t, d in zip(tickets, delays, strict=True)))
        return seen

    assert asyncio.run(run()) == [0, 1, 3, 4, 5], "a failed page releases its turn"


def comparable(sources: dict[str, Any]) -> dict[str, Any]:
    """sources.json but for times, and for the order responses happened to arrive in (two serial runs differ)."""
    def key(entry: dict[str, Any]) -> str:
        return json.dumps(entry, sort_keys=True)

    data = {k: v for k, v in sources.items() if k != "built_at"}
    data["pages"] = sorted(({k: v for k, v in p.items() if k != "fetched_at"} for p in sources["pages"]), key=key)
    data["skipped"] = sorted(sources["skipped"], key=key)
    data["warnings"] = sorted(sources["warnings"], key=key)
    data["scrape_profile"] = {k: v for k, v in sources["scrape_profile"].items() if not k.endswith("_at")}
    return data


def test_the_parallel_path_writes_the_serial_paths_graph(python_docs: SiteServer, crawl: Any,
                                                          tmp_path: Path) -> None:
    url = python_docs.url + "library/index.html"
    results = {}
    for workers in (2, 0):
        run = tmp_path / f"workers-{workers}"
        results[workers] = crawl("docs", graphs=run / "graphs", url=url, graph="library", settings={
            "SKILLGRAPH_PAGE_WORKERS": workers, "SKILLGRAPH_RENDER_ENABLED": False,
            "SKILLGRAPH_ITEMS_DIR": run / "items", "SKILLGRAPH_STATE_PATH": run / "state.sqlite3"})
        assert results[workers].returncode == 0, results[workers].log[-2000:]
    parallel, serial = results[2], results[0]
    assert parallel.stats["skillgraph/pagework/workers"] == 2 and "skillgraph/pagework/workers" not in serial.stats
    assert parallel.stats.get("skillgraph/pagework/pool_broken", 0) == 0
    files = [p.name for p in parallel.markdown_files()]
    assert len(files) >= 300 and files == [p.name for p in serial.markdown_files()]
    for name in files:
        assert (parallel.graph / name).read_bytes() == (serial.graph / name).read_bytes(), name
    assert comparable(parallel.sources) == comparable(serial.sources)
    assert parallel.stats["skillgraph/quality/reused"] >= parallel.stats["skillgraph/graph/pages"], "assessed once"
    llms = [sorted((r.graph / "llms.txt").read_text().splitlines()) for r in (parallel, serial)]
    assert llms[0] == llms[1]
    items = list((tmp_path / "workers-2" / "items").rglob("*.json"))
    assert items and all("html" not in json.loads(p.read_text()) for p in items)


def test_a_page_worker_needs_neither_scrapy_nor_twisted() -> None:
    """The fork server preloads what evaluation imports: without Scrapy and Twisted, workers start small."""
    import subprocess
    import sys

    from scrapy.linkextractors import IGNORED_EXTENSIONS

    from skillgraph.page.work import SCRAPY_IGNORED_EXTENSIONS
    from tests.conftest import ROOT

    assert set(IGNORED_EXTENSIONS) == SCRAPY_IGNORED_EXTENSIONS, "the copy follows Scrapy's list"
    probe = ("import sys; from skillgraph.page.work import PageJob, evaluate; import skillgraph.tiers.evaluate; "
             f"body = open({str(PYTHON_DOCS / 'library/json.html')!r}, 'rb').read(); "
             "r = evaluate(PageJob('html', 'http://docs.test/library/json.html', body, 'utf-8', {}, 200, '', 0.5, "
             "'http://docs.test/')); assert r.attempt.markdown and r.links; "
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('scrapy', 'twisted')))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True)
    assert loaded.stdout.strip() == "[]", loaded.stdout


def test_read_links_reads_each_reference_once_with_the_plain_ways_answer() -> None:
    """Hrefs that differ by fragment or spaces are one reference, read once; anchors and mailto: are not links."""
    from lxml import etree

    from skillgraph.page.work import read_links

    hrefs = [" #top", "", "#", "mailto:a@b.c#x", "json.html#json.dumps", " json.html ", "json.html#x",
             "../glossary.html", "javascript:void(0)", "tel:1", "data:x", "http://elsewhere.test/a#b", "http://elsewhere.test/a",
             "picture.png", "?q=1", "/library/re.html#re.sub"]
    page = "http://docs.test/library/functions.html"
    root = etree.fromstring("<html><body>" + "".join(f'<a href="{h}">x</a>' for h in hrefs) + "</body></html>",
                            etree.HTMLParser())
    inside, outside = read_links(page, "", root, "http://docs.test/")
    assert inside == ["http://docs.test/library/json.html", "http://docs.test/glossary.html",
                      "http://docs.test/library/functions.html?q=1", "http://docs.test/library/re.html"]
    assert outside == ["http://elsewhere.test/a", "http://docs.test/library/picture.png"], \
        "a file under the scope is counted with the links outside it, never dropped"


def test_a_killed_worker_leaves_no_page_unevaluated() -> None:
    """A page worker killed mid-crawl (out of memory, an operator): the pages it held, and every page after,
    are evaluated in the crawl process, with the same verdicts; the pool says so once (stat, warning)."""
    import os
    import signal

    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import MemoryStatsCollector

    from skillgraph.page.pool import INLINE_PAGES, PagePool

    crawler = Crawler(Spider, {"SKILLGRAPH_PAGE_WORKERS": 2})
    crawler.stats = MemoryStatsCollector(crawler)
    pages = sorted(str(p.relative_to(PYTHON_DOCS)) for p in (PYTHON_DOCS / "library").glob("*.html"))[:60]
    responses = [job_for(rel)[1] for rel in pages]
    for response in responses:  # tied to a request, as the ladder's responses are
        response.request = Request(response.url)
    expected = [evaluate(job_for(rel)[0]) for rel in pages]

    async def main() -> tuple[list[Any], int]:
        pool = PagePool(crawler)
        try:
            first = [await pool.evaluate(r, "html", 0.5, "http://docs.test/") for r in responses[:INLINE_PAGES + 1]]
            assert pool.starting is not None
            await pool.starting
            assert pool.executor is not None and pool.workers == 2, "the workers are up"
            pending = [asyncio.ensure_future(pool.evaluate(r, "html", 0.5, "http://docs.test/"))
                       for r in responses[INLINE_PAGES + 1:]]
            await asyncio.sleep(0)  # the jobs are handed to the workers
            os.kill(pool.executor.workers[0].process.pid, signal.SIGKILL)
            rest = await asyncio.wait_for(asyncio.gather(*pending), 120)
            last = await pool.evaluate(responses[0], "html", 0.5, "http://docs.test/")  # after the death, too
            return [*first, *rest, last], pool.workers
        finally:
            pool.shutdown()

    results, workers = asyncio.run(main())
    assert workers == 0, "the broken pool was given up: page work goes on in the crawl process"
    assert crawler.stats.get_value("skillgraph/pagework/pool_broken") == 1
    assert len(results) == len(pages) + 1
    for got, want in zip(results, [*expected, expected[0]], strict=True):
        assert (got.attempt.markdown, got.attempt.title, got.sha256, got.links) == \
            (want.attempt.markdown, want.attempt.title, want.sha256, want.links)
