"""``assess``: run every check on one page and combine them into a score.

Pure and fast: no network, no file I/O, precompiled regular expressions over the
raw markup and the markdown; only when no markdown is given does it call the
project's extractor (the costly part) to get one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from skillgraph.quality.checks import block_check, boilerplate_check, completeness_check
from skillgraph.quality.model import Assessment
from skillgraph.quality.page import Page, text_stats
from skillgraph.quality.structure import forget_scans

DEFAULT_THRESHOLD = 0.5


def _text(value: Any) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else str(value)


def header_lines(headers: Mapping[Any, Any] | None) -> list[str]:
    """``name: value`` lines in lower case; accepts plain dicts and Scrapy ``Headers``."""
    if not headers:
        return []
    lines = []
    for name, value in headers.items():
        values: Iterable[Any] = value if isinstance(value, list | tuple) else [value]
        lines += [f"{_text(name).lower()}: {_text(v).strip().lower()}" for v in values]
    return lines


def assess(
    html: str | None,
    *,
    markdown: str | None = None,
    title: str | None = None,
    status: int = 200,
    headers: Mapping[str, str] | None = None,
    url: str | None = None,
    threshold: float = DEFAULT_THRESHOLD,
) -> Assessment:
    """Assess one page.

    ``html`` is the raw page (block signatures); ``markdown`` the extracted content
    (completeness and boilerplate are judged on it; extracted from ``html`` when not
    given); ``title`` the page title (else the extractor's, else ``<title>``);
    ``status`` and ``headers`` the HTTP response's. The composite score is
    ``block × completeness × (0.6 + 0.4 × boilerplate)``; the page passes when the
    score reaches ``threshold`` and no block label was found.
    """
    if isinstance(html, bytes):  # a response body handed over as is
        html = html.decode("utf-8", errors="replace")
    if markdown is None:
        markdown = ""
        if html:
            from skillgraph.extract import extract_html  # the extractor is optional here

            extraction = extract_html(html, url)
            markdown = extraction.markdown
            title = title or extraction.title
    page = Page(html, markdown, title or "")
    stats = text_stats(markdown)
    block, label = block_check(page, stats, status, header_lines(headers))
    forget_scans()  # the scan served the self-check, these statistics and the block check: not kept
    completeness = completeness_check(stats.text_chars, page.title)
    boilerplate = boilerplate_check(stats)
    score = block.score * completeness.score * (0.6 + 0.4 * boilerplate.score)
    checks = {"block": block, "completeness": completeness, "boilerplate": boilerplate}
    return Assessment(score=score, passed=score >= threshold and label is None, checks=checks, block=label)
