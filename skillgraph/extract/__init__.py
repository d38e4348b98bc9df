"""HTML to docs-grade markdown: the page's content element chosen by landmarks or structure, then code,
tables, headings, lists and links written as markdown and checked against the page's structure.

This module is the public API.

The crawl spider and other components code against exactly these names.
"""

from __future__ import annotations

from skillgraph.extract.api import (
    Extraction,
    extract_html,
    extract_response,
    extract_tree,
    html_to_markdown,
)

__all__ = [
    "Extraction",
    "extract_html",
    "extract_response",
    "extract_tree",
    "html_to_markdown",
]
