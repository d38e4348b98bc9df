"""A crawl of the whole real Python 3.11 documentation mirror, served on loopback."""

from __future__ import annotations

import os
import re

import pytest

from tests.conftest import PYTHON_DOCS
from tests.servers import SiteServer

pytestmark = pytest.mark.slow


def linked_pages() -> int:
    """HTML pages of the mirror that some page links to (a few 'includes/' fragments are orphans)."""
    total = sum(1 for _, _, files in os.walk(PYTHON_DOCS) for f in files if f.endswith(".html"))
    return total - 4


def test_whole_python_docs_mirror_builds(crawl, python_docs: SiteServer) -> None:
    result = crawl("docs", url=python_docs.url + "index.html", graph="pydocs",
                   settings={"SKILLGRAPH_MAX_PAGES": 2000, "SKILLGRAPH_CRAWL_TIMEOUT": 0}, timeout=900)
    assert result.returncode == 0, result.log[-3000:]
    sources = result.sources
    assert sources["scrape_profile"]["strategy"] == "crawl"
    assert sources["truncated"] is None
    pages = sources["pages"]
    assert len(pages) >= linked_pages() >= 520
    files = result.markdown_files()
    assert len(files) == len(pages)
    by_url = {p["url"]: p for p in pages}
    json_page = (result.graph / by_url[python_docs.url + "library/json.html"]["file"]).read_text()
    assert "json.dumps" in json_page and "```" in json_page
    empty = [f.name for f in files if len(f.read_text().strip()) < 20]
    assert len(empty) <= 5, f"near-empty pages: {empty[:10]}"
    assert not any(re.search(r"<(div|span|script)\b", f.read_text()) for f in files[:100])
