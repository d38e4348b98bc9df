"""Article extraction for pages without any content landmark.

Docs generators always mark their content (see :mod:`content`); a page with
no ``main``/``article``/``[role=main]`` is usually a hand-written or blog-like
page, where trafilatura's article heuristics do better than rendering the
whole body.  trafilatura cleans the tree it is given in place, so it gets a
serialised copy, and it is asked for HTML so that our own renderer produces
the markdown (same escaping, fences and tables as every other page).  This is
the only path that parses twice; it is off the docs hot path.
"""

from __future__ import annotations

import logging

import lxml.html
from lxml import etree

logger = logging.getLogger(__name__)

#: Below this many characters of text, trafilatura's result is not trusted.
MIN_TEXT = 200


def article_body(root: etree._Element, url: str | None) -> etree._Element | None:
    """The article trafilatura finds in ``root`` as an element tree, or None."""
    try:
        import trafilatura
    except ImportError:  # pragma: no cover - trafilatura is a project requirement
        return None
    html = etree.tostring(root, encoding="unicode", method="html")
    try:
        result = trafilatura.extract(
            html,
            url=url,
            output_format="html",
            include_formatting=True,
            include_tables=True,
            include_links=True,
            include_images=False,
            favor_recall=True,
        )
    except Exception:  # trafilatura raises assorted errors on odd markup
        logger.debug("trafilatura failed on %s", url, exc_info=True)
        return None
    if not result:
        return None
    tree = lxml.html.document_fromstring(result)
    body = tree.find("body")
    if body is None or len("".join(body.itertext()).strip()) < MIN_TEXT:
        return None
    return body
