"""MediaWiki titles and API answers, as pure functions (no I/O).

The MediaWiki spider (``skillgraph/spiders/mediawiki.py``) enumerates a wiki
through its Action API instead of following links: ``list=allpages`` gives
every content title exactly once, where a link crawl meets each page under
several URLs (``Foo``, ``Foo_bar``, ``index.php?title=...``, redirects). No
Scrapy or ecosystem component reads this API, so the little we need is here:

* titles normalised the way MediaWiki stores them (``Title::newFromText``:
  underscores are spaces, runs of blanks collapse, the first letter is upper
  case on ``first-letter`` wikis) and written into URLs the way
  ``wfUrlencode`` does (so ``C++``, ``Q&A``, ``100%``, quotes and Unicode
  round-trip, ``/`` sub-pages and ``:`` stay readable);
* continuation read in both formats: ``continue`` (MediaWiki 1.26+) and the
  legacy ``query-continue`` (seen in real recorded answers);
* ``action=parse`` and ``meta=siteinfo`` answers in ``formatversion`` 1 and 2.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode, urljoin, urlsplit

from skillgraph.urls import scope_of

#: Characters ``wfUrlencode`` leaves readable in a title's URL (besides ``A-Za-z0-9_.-~``).
_URL_SAFE = ";@$!*(),/~:"
_BLANKS = re.compile(r"[ _\u00a0\u1680\u180e\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+")

ALLPAGES = {"action": "query", "list": "allpages", "apnamespace": "0", "apfilterredir": "nonredirects",
            "aplimit": "max", "format": "json", "formatversion": "2"}
PARSE = {"action": "parse", "prop": "text|displaytitle", "format": "json", "formatversion": "2",
         "redirects": "1", "disableeditsection": "1"}
SITEINFO = {"action": "query", "meta": "siteinfo", "siprop": "general", "format": "json", "formatversion": "2"}


def normalize_title(title: str, first_letter: bool = True) -> str:
    """A title as MediaWiki stores it: ``"c++_faq "`` -> ``"C++ faq"``."""
    text = _BLANKS.sub(" ", title).strip()
    if first_letter and text:
        head = text[0].upper()
        # Single-letter case mapping only, like MediaWiki's Language::ucfirst ("ß" stays "ß").
        text = (head if len(head) == 1 else text[0]) + text[1:]
    return text


def title_key(title: str, first_letter: bool = True) -> str:
    """The database key: the normalised title with underscores (``C++_faq``)."""
    return normalize_title(title, first_letter).replace(" ", "_")


def title_path(title: str, first_letter: bool = True) -> str:
    """The title as it appears in an article URL (``Q&A`` -> ``Q%26A``), like ``wfUrlencode``."""
    return quote(title_key(title, first_letter), safe=_URL_SAFE)


def article_url(article_base: str, title: str, first_letter: bool = True) -> str:
    """``article_base`` is absolute with ``$1`` (``https://wiki.example/wiki/$1``)."""
    return article_base.replace("$1", title_path(title, first_letter), 1)


def api_url(api: str, params: dict[str, str]) -> str:
    return f"{api}?{urlencode(params)}"


def next_continue(data: dict[str, Any]) -> dict[str, str] | None:
    """The parameters that fetch the next batch, or None when the listing is complete."""
    if isinstance(data.get("continue"), dict):
        return {k: str(v) for k, v in data["continue"].items()}
    legacy = data.get("query-continue")
    if isinstance(legacy, dict):
        merged: dict[str, str] = {}
        for module in legacy.values():
            if isinstance(module, dict):
                merged.update({k: str(v) for k, v in module.items()})
        return merged or None
    return None


def listed_titles(data: dict[str, Any], module: str = "allpages") -> list[str]:
    """Titles of one ``list=`` batch (``allpages``, ``backlinks``, ``search``...)."""
    query = data.get("query")
    entries = query.get(module, []) if isinstance(query, dict) else []
    return [e["title"] for e in entries if isinstance(e, dict) and isinstance(e.get("title"), str)]


class ApiError(ValueError):
    """The API answered with an ``error`` object (missing page, disabled module...)."""

    def __init__(self, code: str, info: str) -> None:
        super().__init__(f"{code}: {info}")
        self.code = code


def check_error(data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ApiError("badresponse", f"expected a JSON object, got {type(data).__name__}")
    error = data.get("error")
    if isinstance(error, dict):
        raise ApiError(str(error.get("code", "unknown")), str(error.get("info", error.get("*", ""))))
    return data


@dataclass(frozen=True)
class ParsedPage:
    title: str
    display_title: str  # may hold inline HTML (``<i>...</i>``, ``<span class="mw-page-title-main">``)
    html: str  # the rendered content: ``<div class="mw-parser-output">...</div>``


def _text(value: Any) -> str:
    """formatversion 2 gives a string, formatversion 1 ``{"*": string}``."""
    if isinstance(value, dict):
        value = value.get("*", "")
    return value if isinstance(value, str) else ""


def parsed_page(data: Any) -> ParsedPage:
    parse = check_error(data).get("parse")
    if not isinstance(parse, dict):
        raise ApiError("badresponse", "no parse object")
    title = str(parse.get("title", ""))
    return ParsedPage(title, _text(parse.get("displaytitle")) or title, _text(parse.get("text")))


@dataclass(frozen=True)
class SiteInfo:
    sitename: str
    generator: str  # "MediaWiki 1.39.10"
    article_base: str  # absolute, with $1
    first_letter: bool  # case == "first-letter"

    @property
    def scope(self) -> str:
        """The directory article URLs live in (``https://wiki.example/wiki/``)."""
        prefix = self.article_base.split("$1", 1)[0]
        return prefix if prefix.endswith("/") else scope_of(prefix)


def site_info(data: Any, api: str) -> SiteInfo | None:
    """Read ``meta=siteinfo``; article URLs are kept on the API's origin (mirrors, proxies)."""
    query = data.get("query") if isinstance(data, dict) else None
    general = query.get("general") if isinstance(query, dict) else None
    if not isinstance(general, dict) or "articlepath" not in general:
        return None
    path = str(general["articlepath"])
    if "$1" not in path:
        path = path.rstrip("/") + "/$1"
    origin = urlsplit(api)
    article_base = urljoin(f"{origin.scheme}://{origin.netloc}/", path)
    return SiteInfo(str(general.get("sitename", "")), str(general.get("generator", "MediaWiki")),
                    article_base, general.get("case", "first-letter") == "first-letter")
