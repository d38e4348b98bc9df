"""DocumentItem: feed exports and logs carry no raw HTML; the repr is one short line."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from itemadapter import ItemAdapter
from scrapy.exporters import JsonLinesItemExporter

from skillgraph.items import DocumentItem, export_meta
from tests.conftest import PYTHON_DOCS, TEST_SETTINGS, run_scrapy
from tests.servers import SiteServer

RAW = "<!DOCTYPE html><html><body>" + "<div class='nav'>menu</div>" * 2000 + "</body></html>"


def item(**meta: Any) -> DocumentItem:
    doc = DocumentItem(url="https://docs.example.org/guide.html", title="A guide " * 20, markdown="# Guide\n\ntext\n",
                       fetched_at="2026-12-01T12:00:00Z", source="https://docs.example.org/",
                       domain="docs.example.org", strategy="crawl", tier="html")
    doc.meta.update(meta)
    return doc


def test_repr_is_short_and_has_no_page() -> None:
    text = repr(item(html=RAW, response_status=200))
    assert "\n" not in text and len(text) < 200
    assert text.startswith("<DocumentItem https://docs.example.org/guide.html title='A guide ")
    assert "tier=html" in text and "length=14" in text
    assert "<div" not in text and "markdown" not in text
    assert str(item()) == repr(item()), "Scrapy's 'Scraped from' line prints str(item)"


def test_exporter_drops_the_raw_html_and_keeps_the_notes() -> None:
    out = io.BytesIO()
    exporter = JsonLinesItemExporter(out)
    exporter.start_exporting()
    exporter.export_item(item(html=RAW, response_status=200, quality_checks={"block": {"status": "pass"}}))
    exporter.finish_exporting()
    (line,) = out.getvalue().decode().splitlines()
    data = json.loads(line)
    assert data["meta"] == {"response_status": 200, "quality_checks": {"block": {"status": "pass"}}}
    assert data["markdown"] == "# Guide\n\ntext\n" and data["url"].endswith("guide.html")
    assert "<div" not in line and len(line) < 1000


def test_the_pipelines_still_see_the_html() -> None:
    doc = item(html=RAW)
    assert ItemAdapter(doc)["meta"]["html"] == RAW, "only exports and logs leave it out"
    assert export_meta(None) == {} and export_meta({"html": "x", "tier_warned": True}) == {"tier_warned": True}


def test_a_crawl_with_a_feed_export_writes_no_html(tmp_path: Path) -> None:
    """``-O out.jsonl`` of a real crawl of the Python docs: markdown in, raw pages out; logs likewise."""
    server = SiteServer(PYTHON_DOCS)
    try:
        out = tmp_path / "out.jsonl"
        args = ["crawl", "docs", "-a", f"url={server.url}library/json.html", "-O", str(out),
                "-s", "SKILLGRAPH_MAX_PAGES=3", "-s", f"SKILLGRAPH_GRAPHS_DIR={tmp_path / 'graphs'}",
                "-s", f"SKILLGRAPH_ITEMS_DIR={tmp_path / 'items'}", "-s", f"SKILLGRAPH_STATE_PATH={tmp_path / 's.db'}",
                "-s", "SKILLGRAPH_RENDER_ENABLED=False", "-s", "LOG_LEVEL=DEBUG"]
        for key, value in TEST_SETTINGS.items():
            if key != "LOG_LEVEL":
                args += ["-s", f"{key}={value}"]
        proc = run_scrapy(args)
    finally:
        server.stop()
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) >= 3, "a feed export of zero items proves nothing"
    for data in lines:
        assert data["markdown"] and "html" not in data["meta"]
    text = out.read_text()
    assert "<div" not in text and "<head" not in text and "<html" not in text.lower()
    scraped = [line for line in proc.stderr.splitlines() if "<DocumentItem " in line]
    assert len(scraped) >= 3 and all(len(line) < 400 for line in scraped)
    assert "'markdown':" not in proc.stderr and "<head>" not in proc.stderr
