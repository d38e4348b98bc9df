"""QualityGatePipeline: unit tests on its rules, and a real crawl through every pipeline.

The crawl runs a small spider of this module (``python -m tests.test_quality_pipeline``)
in a subprocess with the project's settings: it fetches real block pages and docs
pages from a loopback server and yields one ``html`` document per response, *without*
the tier ladder, as any spider may; the gate alone must keep block pages and thin
pages out of the graph, and say so in sources.json.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request, Spider
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from skillgraph.items import DocumentItem
from skillgraph.pipelines.quality import BlockedPage, LowQualityPage, QualityGatePipeline
from skillgraph.signals import build_warning
from tests.conftest import ROOT, corpus_file
from tests.servers import Rule, SiteServer

DOC = "doc_html/sphinx_furo_manim/quickstart.html"
#: path -> (corpus or fixture file, status, extra headers, tier the spider gives the document)
PAGES: dict[str, tuple[str, int, dict[str, str], str]] = {
    "/docs/quickstart.html": (DOC, 200, {}, "html"),
    "/news/wapo.html": ("block_pages/paywall-markup_full-article__washingtonpost_NEGATIVE.html", 200, {}, "html"),
    "/cf/iuam.html": ("block_pages/cloudflare_iuam_just-a-moment_2020-05-27__cloudscraper.html", 503,
                      {"Server": "cloudflare"}, "html"),
    "/edge/akamai.html": ("block_pages/akamai_access-denied_reference__att.html", 403,
                          {"Server": "AkamaiGHost"}, "html"),
    "/docs/missing.html": ("block_pages/griffe__mkdocs-material_404.html", 200, {}, "html"),
    "/docs/challenged.html": (DOC, 200, {"cf-mitigated": "challenge"}, "html"),
    "/docs/thin.html": ("fixture:<html><head><title>Stub page here</title></head><body><h1>Stub</h1>"
                        "<p>To be written.</p></body></html>", 200, {}, "html"),
    "/docs/best.html": ("fixture:<html><head><title>Almost empty page</title></head><body><p>Short.</p></body></html>",
                        200, {}, "best-effort"),
    "/llms/section.md": ("fixture:# Glossary\n\nA short llms-full section.\n", 200,
                         {"Content-Type": "text/markdown; charset=utf-8"}, "corpus"),
}


def body(source: str) -> bytes:
    return source[len("fixture:"):].encode() if source.startswith("fixture:") else corpus_file(source).read_bytes()


class GateSpider(Spider):
    """Fetches PAGES and yields each as a document, status, headers and HTML in meta."""

    name = "quality_gate_test"
    graph_name = "gate"

    def __init__(self, origin: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.origin = origin

    async def start(self) -> AsyncIterator[Any]:
        for path in PAGES:
            yield Request(self.origin + path, meta={"handle_httpstatus_all": True}, callback=self.parse)

    def parse(self, response: Response, **kwargs: Any) -> Iterator[DocumentItem]:
        from skillgraph.extract import extract_response

        tier = PAGES[response.url[len(self.origin):]][3]
        text = response.text if hasattr(response, "text") else response.body.decode()
        if tier == "corpus":
            title, markdown, html = "Glossary", text, None
        else:
            extraction = extract_response(response)  # type: ignore[arg-type]
            title, markdown, html = extraction.title, extraction.markdown, text
        headers = {k.decode(): b", ".join(v).decode() for k, v in response.headers.items()}
        yield DocumentItem(url=response.url, title=title, markdown=markdown, fetched_at="2026-11-29T12:00:00Z",
                           source=self.origin, domain="127.0.0.1", strategy="crawl", tier=tier,
                           meta={"response_status": response.status, "response_headers": headers, "html": html})


def crawl_main(origin: str, graphs: str, stats: str, state: str) -> None:
    from scrapy.crawler import CrawlerProcess
    from scrapy.utils.project import get_project_settings

    settings = get_project_settings()
    settings.setdict({"DOWNLOAD_DELAY": 0, "SKILLGRAPH_GRAPHS_DIR": graphs, "SKILLGRAPH_STATS_FILE": stats,
                      "SKILLGRAPH_ITEMS_DIR": str(Path(graphs).parent / "items"), "SKILLGRAPH_STATE_PATH": state,
                      "SKILLGRAPH_SSRF_ALLOWLIST": origin.split("//")[1].rstrip("/"), "LOG_LEVEL": "INFO"},
                     priority="cmdline")
    process = CrawlerProcess(settings)
    process.crawl(GateSpider, origin=origin.rstrip("/"))
    process.start()


@pytest.fixture(scope="module")
def gate_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SiteServer]:
    rules = {path: Rule(status=status, headers={"Content-Type": "text/html; charset=utf-8", **headers},
                        body=body(source)) for path, (source, status, headers, _) in PAGES.items()}
    server = SiteServer(tmp_path_factory.mktemp("gate"), rules=rules)
    yield server
    server.stop()


def test_crawl_keeps_block_and_thin_pages_out_of_the_graph(gate_site: SiteServer, tmp_path: Path) -> None:
    graphs, stats_file = tmp_path / "graphs", tmp_path / "stats.json"
    proc = subprocess.run([sys.executable, "-m", "tests.test_quality_pipeline", gate_site.url, str(graphs),
                           str(stats_file), str(tmp_path / "state.sqlite3")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    stats = json.loads(stats_file.read_text())
    sources = json.loads((graphs / "gate" / "sources.json").read_text())
    origin = gate_site.url.rstrip("/")
    pages = {p["url"][len(origin):]: p for p in sources["pages"]}
    assert set(pages) == {"/docs/quickstart.html", "/news/wapo.html", "/docs/best.html", "/llms/section.md"}
    assert pages["/docs/quickstart.html"]["quality"] > 0.9 and pages["/news/wapo.html"]["quality"] > 0.8
    assert pages["/docs/best.html"]["tier"] == "best-effort" and pages["/docs/best.html"]["quality"] < 0.5
    assert pages["/llms/section.md"]["tier"] == "corpus", "a short llms-full section is legitimate"
    warnings = {(w["kind"], w["url"][len(origin):], w.get("label")) for w in sources["warnings"]}
    assert warnings == {
        ("blocked", "/cf/iuam.html", "cloudflare-challenge"),
        ("blocked", "/docs/challenged.html", "cloudflare-challenge"),
        ("blocked", "/edge/akamai.html", "akamai"),
        ("blocked", "/docs/missing.html", "not-found"),
        ("low-quality", "/docs/thin.html", None),
        ("best-effort", "/docs/best.html", None),
    }
    assert stats["skillgraph/quality/blocked/cloudflare-challenge"] == 2
    assert stats["skillgraph/quality/blocked/akamai"] == 1
    assert stats["skillgraph/quality/blocked/not-found"] == 1
    assert stats["item_dropped_reasons_count/BlockedPage"] == 4
    assert stats["item_dropped_reasons_count/LowQualityPage"] == 1
    assert stats["skillgraph/quality/passed"] == 2
    assert stats["skillgraph/quality/lenient/corpus"] == 1
    assert stats["skillgraph/quality/failed/completeness"] >= 3
    assert stats["skillgraph/graph/pages"] == 4
    assert sum(1 for _ in (graphs / "gate").glob("*.md")) == 4


# Unit tests: the pipeline built from a crawler, fed items directly. ---------------------------


class Bare(Spider):
    name = "bare"


def pipeline(**settings: Any) -> tuple[QualityGatePipeline, list[dict[str, Any]]]:
    crawler = get_crawler(Bare, {"SKILLGRAPH_QUALITY_ENABLED": True, **settings})
    received: list[dict[str, Any]] = []
    crawler.signals.connect(lambda **kw: received.append(kw), signal=build_warning, weak=False)
    return build_from_crawler(QualityGatePipeline, crawler), received


def item(markdown: str, tier: str = "html", title: str = "A page about things", **meta: Any) -> DocumentItem:
    return DocumentItem(url="https://docs.example.org/p", title=title, markdown=markdown,
                        fetched_at="2026-11-29T12:00:00Z", source="https://docs.example.org/",
                        domain="docs.example.org", strategy="crawl", tier=tier, meta=dict(meta))


GOOD = "# A page about things\n\n" + "This paragraph explains how the thing works in some detail. " * 8 + "\n"


def test_disabled_gate_is_not_configured() -> None:
    crawler = get_crawler(Bare, {"SKILLGRAPH_QUALITY_ENABLED": False})
    with pytest.raises(NotConfigured):
        build_from_crawler(QualityGatePipeline, crawler)


def test_passing_item_gets_its_score_and_checks() -> None:
    gate, warnings = pipeline()
    out = gate.process_item(item(GOOD))
    assert out.quality is not None and out.quality > 0.9
    assert out.meta["quality_checks"]["block"] is None and warnings == []
    assert gate.stats.get_value("skillgraph/quality/passed") == 1


def test_blocked_item_is_dropped_with_a_labelled_warning(caplog: pytest.LogCaptureFixture) -> None:
    gate, warnings = pipeline()
    html = corpus_file("block_pages/gitlab_429_too-many-requests.html").read_text()
    with caplog.at_level(logging.WARNING), pytest.raises(BlockedPage):
        gate.process_item(item("# 429\n\nToo many requests received.\n", html=html, response_status=429))
    assert warnings[0]["kind"] == "blocked" and warnings[0]["label"] == "rate-limit"
    assert gate.stats.get_value("skillgraph/quality/blocked/rate-limit") == 1
    assert gate.stats.get_value("skillgraph/quality/warnings/blocked") == 1
    assert "rate-limit" in caplog.text


def test_threshold_setting_and_low_quality_drop() -> None:
    link_farm = "# Modules\n\n" + "\n".join(f"- [module number {i}](/m{i}.html)" for i in range(60)) + "\n"
    assert pipeline()[0].process_item(item(link_farm)).quality < 0.9
    gate, warnings = pipeline(SKILLGRAPH_QUALITY_THRESHOLD=0.9)
    with pytest.raises(LowQualityPage):
        gate.process_item(item(link_farm))
    assert warnings[0]["kind"] == "low-quality" and gate.stats.get_value("skillgraph/quality/failed/boilerplate") == 1


def test_corpus_and_markdown_tiers_are_not_dropped_for_thin_content_or_wording() -> None:
    gate, warnings = pipeline()
    for tier in ("corpus", "markdown"):
        assert gate.process_item(item("# Glossary\n\nShort.\n", tier=tier)).quality < 0.5
        # An llms-full section *about* errors is not an error page...
        assert gate.process_item(item("# 404 - Not found\n\nWhat the API answers.\n", tier=tier)).tier == tier
    # ...but a .md link answered by a real block response is.
    with pytest.raises(BlockedPage):
        gate.process_item(item("# Just a moment...\n", tier="markdown", response_status=503,
                               response_headers={"cf-mitigated": "challenge"}))
    assert [w["kind"] for w in warnings] == ["blocked"]
    assert gate.stats.get_value("skillgraph/quality/lenient/corpus") == 2


def test_best_effort_items_are_kept_and_warned_once() -> None:
    gate, warnings = pipeline()
    kept = gate.process_item(item("Short.", tier="best-effort"))
    assert kept.tier == "best-effort" and warnings[0]["kind"] == "best-effort"
    gate.process_item(item("Short.", tier="best-effort", tier_warned=True))
    assert len(warnings) == 1, "the tier ladder already warned about this page"
    assert gate.stats.get_value("skillgraph/quality/best_effort") == 2


def test_dict_items_work_through_itemadapter() -> None:
    gate, _ = pipeline()
    out = gate.process_item({"url": "https://docs.example.org/d", "title": "A page about things", "markdown": GOOD,
                             "tier": "html"})
    assert out["quality"] > 0.9 and "meta" not in out


if __name__ == "__main__":
    crawl_main(*sys.argv[1:5])
