"""A graph is itself an llms corpus (issue 14, DESIGN.md "Output layout"), end to end; its files are 0644.

Build a graph of the real Python docs' ``tutorial/``, check that its
``llms.txt`` links are exactly its page files, then serve the graph folder
as a site and crawl it like any other: detection must find its
``llms-full.txt`` (or its ``llms.txt``), and at least 95% of the graph's
markdown lines must come back in the second graph. (Lines with links to
other pages may not: their targets are files of the first graph, which the
second resolves against the served folder.) The first crawl runs under umask
077: every file it writes, graph and disk items alike, must still be 0644
(readable by the web server that serves the graph, or another user's agent).
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from urllib.parse import unquote

from tests.conftest import CrawlResult
from tests.servers import SiteServer

NO_RENDER = {"SKILLGRAPH_RENDER_ENABLED": False}
LLMS_LINK = re.compile(r"^- \[[^\]]*\]\(([^)\s]+)\)", re.M)


def markdown_lines(graph: Path) -> list[str]:
    """Every non-blank line of the graph's pages, stripped, in file order."""
    return [line.strip() for path in sorted(graph.glob("*.md")) for line in path.read_text("utf-8").splitlines()
            if line.strip()]


def test_a_served_graph_crawls_back_into_the_same_lines(crawl, python_docs: SiteServer, tmp_path: Path) -> None:
    umask = os.umask(0o077)  # inherited by the crawl: files created plainly would be 0600
    try:
        first: CrawlResult = crawl("docs", url=python_docs.url + "tutorial/", graph="tutorial", settings=NO_RENDER)
    finally:
        os.umask(umask)
    assert first.returncode == 0, first.log[-3000:]
    graph = first.graph
    pages = first.sources["pages"]
    assert len(pages) >= 15
    written = [p for p in [*graph.rglob("*"), *(tmp_path / "items").rglob("*")] if p.is_file()]
    assert {p.name for p in written} >= {"llms.txt", "llms-full.txt", "sources.json"}
    assert len([p for p in written if p.suffix == ".json" and p.parent.name == "docs"]) == len(pages), "disk items"
    modes = {str(p): oct(stat.S_IMODE(p.stat().st_mode)) for p in written}
    assert set(modes.values()) == {"0o644"}, {p: m for p, m in modes.items() if m != "0o644"}

    links = [unquote(link) for link in LLMS_LINK.findall((graph / "llms.txt").read_text("utf-8"))]
    assert all((graph / link).is_file() for link in links), [link for link in links if not (graph / link).is_file()]
    assert sorted(links) == sorted(p["file"] for p in pages) == sorted(p.name for p in graph.glob("*.md")), \
        "llms.txt lists every page file of the graph, once"

    served = SiteServer(graph)
    try:
        second = crawl("docs", url=served.url, graph="again", settings=NO_RENDER)
    finally:
        served.stop()
    assert second.returncode == 0, second.log[-3000:]
    profile = second.sources["scrape_profile"]
    assert profile["strategy"] in ("llms-full", "llms-index"), profile
    assert not [path for _, path, _ in served.requests if path.endswith(".html")], "nothing but the corpus files"

    original, rebuilt = markdown_lines(graph), set(markdown_lines(second.graph))
    back = sum(1 for line in original if line in rebuilt)
    assert back >= 0.95 * len(original), (f"{back} of {len(original)} lines came back",
                                          [line for line in original if line not in rebuilt][:20])
