"""The three checks: block-page detection, completeness, boilerplate.

Each returns a :class:`~skillgraph.quality.model.Check` (pass / warn / fail and a 0..1
score); ``block_check`` also returns the block label. docs/quality.md explains the rules.
"""

from __future__ import annotations

from collections.abc import Iterable

from skillgraph.quality.message import heading_segments, is_topic, message_in
from skillgraph.quality.model import FAIL, PASS, WARN, Check
from skillgraph.quality.page import Page, TextStats
from skillgraph.quality.signatures import (
    RANK_KIND,
    RANK_VENDOR,
    SIGNATURES,
    STATUS_LABELS,
    VENDOR_STATUSES,
    Signature,
    SignatureGroup,
)

MIN_CONTENT_CHARS = 200  #: completeness: readable characters of main content
MIN_TITLE_CHARS = 10  #: completeness: a shorter title is a warning
THIN_CHARS = 2000  #: markup, title and text signatures only count on a page this thin...
KIND_THIN_CHARS = 1000  #: ...and the kinds' wording (404, 429, login, forbidden) on a message page this thin...
MESSAGE_TEXT_CHARS = 600  #: ...or whose text outside links is this short (a 404 with a list of suggestions)
STUB_CHARS = 200  #: a page with less content than this is near-empty: vendor scripts alone prove a challenge
VENDOR_HEADING_CHARS = 120  #: a vendor's heading can be long ("Access denied | x used Cloudflare to restrict access")
BLOCK_WARN_SCORE = 0.95  #: a marker on a full page: noted, not blocked
#: Markers worth a warning when a full page carries them (WaPo's ``class="paywall"``).
FULL_PAGE_MARKERS = ("paywall", "captcha", "cf-chl", "_incapsula_resource", "datadome", "sucuri_", "awswaf")

FULL_PAGE_SCAN_CHARS = 65_536

_HTML_SIGS = tuple(s for s in SIGNATURES if s.where == "html")
_ELEMENT_SIGS = tuple(s for s in SIGNATURES if s.where == "element")
_VENDOR_TITLE_SIGS = tuple(s for s in SIGNATURES if s.where == "title" and s.rank == RANK_VENDOR)
_MESSAGE_SIGS = tuple(s for s in SIGNATURES if s.where == "title" and s.rank < RANK_VENDOR)
_TEXT_SIGS = tuple(s for s in SIGNATURES if s.where == "text")
_HEADER_SIGS = tuple(s for s in SIGNATURES if s.where == "header")
_FORM_SIGS = tuple(s for s in SIGNATURES if s.where == "form")
_STUB_SIGS = tuple(s for s in SIGNATURES if s.where == "stub")
#: The groups searched in a page's whole markup (:func:`_live`), their prefixes under shared gates.
_HTML_GROUP = SignatureGroup(_HTML_SIGS)
_STUB_GROUP = SignatureGroup(_STUB_SIGS)
_FORM_GROUP = SignatureGroup(_FORM_SIGS)
#: Mechanics alone, on a near-empty page: a script that sets a cookie (or solves a puzzle) and reloads.
_STUB_CHALLENGE = ("cookie-script", "proof-of-work")  #: either, with "reload"
_STUB_CHALLENGE_SIG = Signature("challenge", "stub", "cookie-script|proof-of-work", "a script that sets a cookie "
                                "(or solves a puzzle) and reloads, on a near-empty page")


def _matching(sigs: Iterable[Signature], texts: Iterable[str]) -> list[Signature]:
    texts = [t for t in texts if t]
    return [s for s in sigs if any(s.search(t) for t in texts)]


def _live(page: Page, group: SignatureGroup) -> list[Signature]:
    """Signatures found in the live markup: first in the whole markup as read (cheap, nearly always nothing),
    then, for those, in the tags and scripts alone (text nodes dropped: a ``<pre>`` quoting a marker is text)."""
    if not page.raw:
        return []
    candidates = group.matching(page.markup.source)
    return _matching(candidates, [page.markup.tags]) if candidates else []


def is_message_page(stats: TextStats, page: Page) -> bool:
    """Little content, or little outside links, and no code or table: a page that only *says* something."""
    small = stats.text_chars < KIND_THIN_CHARS or stats.text_chars - stats.link_chars < MESSAGE_TEXT_CHARS
    return small and not page.docs_like


def _corroborated(page: Page, found: list[Signature]) -> list[Signature]:
    """Wording that ``needs`` mechanics counts only when the page shows that many of its group."""
    if not any(s.needs for s in found):
        return found
    return [s for s in found if not s.needs or page.shown(s.group) >= s.needs]


def _evidence(page: Page, stats: TextStats) -> list[Signature]:
    """Markup, title and text signatures that count on this (thin or non-2xx) page, best first."""
    content = stats.text_chars
    message = is_message_page(stats, page)
    found = _live(page, _HTML_GROUP) + _matching(_ELEMENT_SIGS, [page.markup.clean if page.raw else ""])
    if content < STUB_CHARS:
        found += _live(page, _STUB_GROUP)
        if page.raw and page.shows("reload") and any(page.shows(name) for name in _STUB_CHALLENGE):
            found.append(_STUB_CHALLENGE_SIG)
    if message:
        found += _live(page, _FORM_GROUP)
    found += _matching(_VENDOR_TITLE_SIGS, [h for h in page.headings if len(h) <= VENDOR_HEADING_CHARS])
    # Human checks, login walls and paywalls say so with mechanics to back them (``needs``); the other
    # kinds only say so, which counts on a message page alone.
    if message or not page.docs_like:
        parts = heading_segments(page.headings)
        joined = "\n".join(parts)
        found += [s for s in _MESSAGE_SIGS if (message or s.needs) and message_in(s, parts, joined)]
    # The kinds' text (no mechanics to back it) on a message page whose own heading is no topic: "... when you
    # are rate limited" under "HTTP status codes" is a docs page talking.
    kind_text = message and not is_topic(page.main_heading, _MESSAGE_SIGS)
    found += [s for s in _TEXT_SIGS if (s.rank > RANK_KIND or (s.needs and not page.docs_like) or kind_text)
              and s.search(page.visible_text)]
    return sorted(_corroborated(page, found), key=lambda s: -s.rank)  # stable: signature order within a rank


def _status_label(status: int, top: Signature | None, vendor_headers: list[Signature]) -> tuple[str, str]:
    """The label of a 4xx/5xx response: a vendor's when one shows, else the status's kind."""
    if top is not None and top.rank > 1 and (status in VENDOR_STATUSES or status not in STATUS_LABELS):
        return top.label, f"HTTP {status}, {top.note}"
    if status == 403 and vendor_headers:
        return vendor_headers[0].label, f"HTTP 403 from {vendor_headers[0].note}"
    if status in STATUS_LABELS:
        return STATUS_LABELS[status], f"HTTP {status}"
    if top is not None:
        return top.label, f"HTTP {status}, {top.note}"
    return ("server-error" if status >= 500 else "client-error"), f"HTTP {status}"


def block_check(page: Page, stats: TextStats, status: int, header_lines: list[str]) -> tuple[Check, str | None]:
    """The block label of a page: its headers, then its status, then (on a thin page) its markup and wording."""
    content_chars = stats.text_chars
    headers = _matching(_HEADER_SIGS, header_lines) if header_lines else []
    decisive = [s for s in headers if s.decisive]
    if decisive:
        return Check(FAIL, f"{decisive[0].label}: {decisive[0].note} (header)", 0.0), decisive[0].label
    thin = content_chars < THIN_CHARS
    if status >= 400:
        evidence = _evidence(page, stats)
        label, why = _status_label(status, evidence[0] if evidence else None, [s for s in headers if s.vendor])
        return Check(FAIL, f"{label}: {why}", 0.0), label
    if thin:
        evidence = _evidence(page, stats)
        if evidence:
            top = evidence[0]
            return Check(FAIL, f"{top.label}: {top.note} on a thin page ({content_chars} chars)", 0.0), top.label
        return Check(PASS, f"no block signature ({content_chars} chars)", 1.0), None
    marker = page.contains(FULL_PAGE_MARKERS, FULL_PAGE_SCAN_CHARS)
    if marker is not None:
        return Check(WARN, f"markup has {marker!r} but {content_chars} chars of content: not blocked",
                     BLOCK_WARN_SCORE), None
    return Check(PASS, f"full page ({content_chars} chars)", 1.0), None


def completeness_check(content_chars: int, title: str) -> Check:
    title_chars = len(title.strip())
    if content_chars < MIN_CONTENT_CHARS:
        return Check(FAIL, f"{content_chars} chars of content (< {MIN_CONTENT_CHARS})",
                     content_chars / (2 * MIN_CONTENT_CHARS))
    if title_chars < MIN_TITLE_CHARS:
        return Check(WARN, f"title has {title_chars} chars (< {MIN_TITLE_CHARS})", 0.9)
    return Check(PASS, f"{content_chars} chars of content, title {title_chars} chars", 1.0)


def boilerplate_check(stats: TextStats) -> Check:
    """Link density and the share of text in prose paragraphs (or code)."""
    if stats.text_chars == 0:
        return Check(FAIL, "no readable text", 0.0)
    density = stats.link_chars / stats.text_chars
    prose = stats.prose_chars / max(1, stats.block_chars)
    score = 0.5 * (1 - min(1.0, density)) + 0.5 * min(1.0, prose / 0.5)
    status = PASS if score >= 0.6 else WARN if score >= 0.3 else FAIL
    return Check(status, f"link density {density:.2f}, paragraph text {prose:.2f}", score)
