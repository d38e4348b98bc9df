"""Docs-grade HTML -> markdown extraction (public API).

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
