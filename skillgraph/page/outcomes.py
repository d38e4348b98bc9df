"""Refusals of a page request that are not failures: the page is accounted for another way.

The page callbacks' errbacks skip these (no ``skipped`` entry); the middlewares that
raise them are :mod:`skillgraph.middlewares.budget` (a bound), :mod:`skillgraph.extensions.crawl_timeout`
(the timeout) and :mod:`skillgraph.middlewares.recency` / ``conditional`` (an unchanged page).
"""

from __future__ import annotations

from scrapy.exceptions import IgnoreRequest


class Unreached(IgnoreRequest):
    """A bound (pages or time) stopped the build before this request: its URL is left for the next run.

    Not a skip: the URL stays unreached in the ledger, counted in ``truncated.skipped``.
    """


class PageUnchanged(IgnoreRequest):
    """The page is known unchanged (recent, or answered 304): its previous file is carried over."""
