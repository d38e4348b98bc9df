"""Parsers for ``llms.txt`` indexes and ``llms-full.txt`` corpora.

Neither Scrapy nor a well-kept library parses these formats (the reference
``llms_txt`` package targets notebooks and drops the per-link section), so the
two small parsers live here. Both are pure and never raise on real-world input:
every file in ``shared/corpus`` goes through them in the tests.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit, urlunsplit

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ATX_H12 = re.compile(r"^ {0,3}(#{1,2})(?:[ \t]+(.*?))?[ \t]*#*[ \t]*$")
_LIST_LINK = re.compile(
    r"^\s*[-*+]\s+\[(?P<name>[^\]]+)\]\((?P<url>[^)\s]+)(?:\s+\"[^\"]*\")?\)(?:\s*:\s*(?P<notes>.*))?"
)
_H1 = re.compile(r"^#\s+(.+?)\s*#*\s*$")
_H2 = re.compile(r"^##\s+(.+?)\s*#*\s*$")
_SLUG_DROP = re.compile(r"[^\w\- ]+", re.UNICODE)


@dataclass(frozen=True)
class IndexLink:
    """One ``[name](url): notes`` entry of an llms.txt file."""

    name: str
    url: str
    notes: str
    section: str | None

    @property
    def optional(self) -> bool:
        return (self.section or "").strip().lower() == "optional"


@dataclass
class LlmsIndex:
    title: str | None
    summary: str | None
    links: list[IndexLink] = field(default_factory=list)


def looks_like_html(body: str, content_type: str | None = None) -> bool:
    """DESIGN.md's HTML test: a ``text/html`` type or a body opening like HTML."""
    if content_type and "text/html" in content_type.lower():
        return True
    head = body.lstrip("\ufeff \t\r\n")[:64].lower()
    return head.startswith(("<!doctype", "<html"))


def parse_llms_txt(text: str, base_url: str) -> LlmsIndex:
    """Parse an llms.txt index per llmstxt.org: H1, blockquote, H2 sections of links.

    Links are resolved against ``base_url``; links inside code fences are
    ignored; a file with no H2 sections (a flat list) keeps every link with
    ``section=None``. Same-page fragments (``#contact``) are dropped: they name
    no document.
    """
    index = LlmsIndex(title=None, summary=None)
    section: str | None = None
    in_fence = False
    summary_lines: list[str] = []
    seen: set[str] = set()
    for line in text.lstrip("\ufeff").splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        if index.title is None and (m := _H1.match(line)):
            index.title = m.group(1)
            continue
        if m := _H2.match(line):
            section = m.group(1)
            continue
        if section is None and line.startswith(">"):
            summary_lines.append(line.lstrip("> ").strip())
            continue
        m = _LIST_LINK.match(line)
        if not m:
            continue
        raw = m.group("url").strip("<>")
        url = urljoin(base_url, raw)
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            continue
        page = urlunsplit(parts._replace(fragment=""))
        if page == urlunsplit(urlsplit(base_url)._replace(fragment="")) or page in seen:
            continue
        seen.add(page)
        index.links.append(IndexLink(m.group("name").strip(), page, (m.group("notes") or "").strip(), section))
    index.summary = " ".join(s for s in summary_lines if s) or None
    return index


def markdown_twin(url: str) -> str | None:
    """The llms.txt convention's markdown twin of an HTML page URL, or None.

    ``page.html`` -> ``page.html.md``; ``dir/`` -> ``dir/index.html.md``;
    ``page`` (no extension) -> ``page.md``. URLs that already name a text
    format (``.md``, ``.txt``, ...) have no twin.
    """
    parts = urlsplit(url)
    path = parts.path or "/"
    last = path.rsplit("/", 1)[-1]
    if path.endswith("/"):
        path += "index.html.md"
    elif last.lower().endswith((".html", ".htm")) or "." not in last:
        path += ".md"
    else:
        return None
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


@dataclass(frozen=True)
class Section:
    """A contiguous slice of an llms-full corpus, from one H1/H2 to the next."""

    title: str
    slug: str
    text: str


def slugify(title: str) -> str:
    """GitHub-style heading slug: lower case, punctuation dropped, spaces to ``-``."""
    title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title)  # [text](url) -> text
    slug = _SLUG_DROP.sub("", title.replace("`", "")).strip().lower()
    return re.sub(r"[\s]+", "-", slug)[:80].strip("-") or "section"


def split_sections(text: str) -> list[Section]:
    """Split a corpus at ATX H1/H2 headings outside code fences.

    Lossless: ``"".join(s.text for s in sections) == text``. Text before the
    first heading is a section of its own (titled ``preamble``).
    """
    lines = text.splitlines(keepends=True)
    starts: list[tuple[int, str]] = []
    fence: str | None = None
    for i, line in enumerate(lines):
        m = _FENCE.match(line)
        if m:
            marker = m.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence) and not line.strip()[len(marker):].strip():
                fence = None
            continue
        if fence is None and (h := _ATX_H12.match(line.rstrip("\r\n"))) and (h.group(2) or "").strip():
            starts.append((i, h.group(2).strip()))
    sections: list[Section] = []
    if not starts or starts[0][0] > 0:
        end = starts[0][0] if starts else len(lines)
        pre = "".join(lines[:end])
        if pre:
            sections.append(Section("preamble", "preamble", pre))
    used: dict[str, int] = {}
    for n, (start, title) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(lines)
        slug = slugify(title)
        count = used.get(slug, 0)
        used[slug] = count + 1
        sections.append(Section(title, f"{slug}-{count}" if count else slug, "".join(lines[start:end])))
    return sections


def coalesce(sections: list[Section], max_sections: int, file_bytes: int) -> list[Section]:
    """Past ``max_sections``, merge adjacent sections while a file stays within ``file_bytes``.

    A single section larger than ``file_bytes`` stays whole. The merged
    section keeps the first member's title and slug, so its URL stays stable.
    """
    if len(sections) <= max_sections:
        return sections
    merged: list[Section] = []
    group: list[Section] = []
    size = 0
    for section in sections:
        n = len(section.text.encode("utf-8"))
        if group and size + n > file_bytes:
            merged.append(_join(group))
            group, size = [], 0
        group.append(section)
        size += n
    if group:
        merged.append(_join(group))
    return merged


def _join(group: list[Section]) -> Section:
    first = group[0]
    return Section(first.title, first.slug, "".join(s.text for s in group))
