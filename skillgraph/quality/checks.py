"""The three checks: block-page detection, completeness, boilerplate.

Each returns a :class:`~skillgraph.quality.model.Check` (pass / warn / fail and a 0..1
score); ``block_check`` also returns the block label. docs/quality.md explains the rules.
"""

from __future__ import annotations

from collections.abc import Iterable

from skillgraph.quality.model import FAIL, PASS, WARN, Check
from skillgraph.quality.page import Page, TextStats
from skillgraph.quality.signatures import SIGNATURES, STATUS_LABELS, VENDOR_STATUSES, Signature

MIN_CONTENT_CHARS = 200  #: completeness: readable characters of main content
MIN_TITLE_CHARS = 10  #: completeness: a shorter title is a warning
THIN_CHARS = 2000  #: markup, title and text signatures only count on a page this thin...
KIND_THIN_CHARS = 1000  #: ...and error wording (404, 429, login, forbidden) on one this thin
STUB_CHARS = 200  #: a page with less content than this is near-empty: vendor scripts alone prove a challenge
KIND_HEADING_CHARS = 48  #: an error heading is short ("404 - Not found"), not a docs title...
VENDOR_HEADING_CHARS = 120  #: ...a vendor's can be longer ("Access denied | x used Cloudflare to restrict access")
BLOCK_WARN_SCORE = 0.95  #: a marker on a full page: noted, not blocked
#: Markers worth a warning when a full page carries them (WaPo's ``class="paywall"``).
FULL_PAGE_MARKERS = ("paywall", "captcha", "cf-chl", "_incapsula_resource", "datadome", "sucuri_", "awswaf")

FULL_PAGE_SCAN_CHARS = 65_536

_HTML_SIGS = tuple(s for s in SIGNATURES if s.where == "html")
_TITLE_SIGS = tuple(s for s in SIGNATURES if s.where == "title")
_TEXT_SIGS = tuple(s for s in SIGNATURES if s.where == "text")
_HEADER_SIGS = tuple(s for s in SIGNATURES if s.where == "header")
_FORM_SIGS = tuple(s for s in SIGNATURES if s.where == "form")
_STUB_SIGS = tuple(s for s in SIGNATURES if s.where == "stub")


def _matching(sigs: Iterable[Signature], texts: Iterable[str]) -> list[Signature]:
    texts = [t for t in texts if t]
    return [s for s in sigs if any(s.search(t) for t in texts)]


def _evidence(page: Page, content_chars: int) -> list[Signature]:
    """Markup, title and text signatures that count on this (thin or non-2xx) page, best first."""
    very_thin = content_chars < KIND_THIN_CHARS
    found = _matching(_FORM_SIGS, [page.html]) if very_thin else []
    found += _matching(_STUB_SIGS, [page.long_html]) if content_chars < STUB_CHARS else []
    # A large challenge page (an old IUAM with a 100 kB script) has its markers past MARKUP_CHARS.
    found += _matching(_HTML_SIGS, [page.long_html if very_thin else page.html])
    vendor_headings = [h for h in page.headings if len(h) <= VENDOR_HEADING_CHARS]
    kind_headings = [h for h in vendor_headings if len(h) <= KIND_HEADING_CHARS] if very_thin else []
    found += _matching([s for s in _TITLE_SIGS if s.rank > 1], vendor_headings)
    found += _matching([s for s in _TITLE_SIGS if s.rank == 1], kind_headings)
    found += _matching([s for s in _TEXT_SIGS if s.rank > 1 or very_thin], [page.visible_text])
    if page.html and not page.has_password_field:
        # A page titled "Login" is a docs topic; a login wall has the form (or says so).
        found = [s for s in found if not (s.label == "login-wall" and s.where == "title")]
    return sorted(found, key=lambda s: -s.rank)  # stable: signature order within a rank


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


def block_check(page: Page, content_chars: int, status: int, header_lines: list[str]) -> tuple[Check, str | None]:
    headers = _matching(_HEADER_SIGS, header_lines) if header_lines else []
    decisive = [s for s in headers if s.decisive]
    if decisive:
        return Check(FAIL, f"{decisive[0].label}: {decisive[0].note} (header)", 0.0), decisive[0].label
    thin = content_chars < THIN_CHARS
    if status >= 400:
        evidence = _evidence(page, content_chars)
        label, why = _status_label(status, evidence[0] if evidence else None, [s for s in headers if s.vendor])
        return Check(FAIL, f"{label}: {why}", 0.0), label
    if thin:
        evidence = _evidence(page, content_chars)
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
