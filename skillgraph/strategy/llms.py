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

from skillgraph.markdown import HEADING, IN_FENCE, scan, split_lines

_LIST_LINK = re.compile(
    r"^\s*[-*+]\s+\[(?P<name>[^\]]+)\]\((?P<url>[^)\s]+)(?:\s+\"[^\"]*\")?\)(?:\s*:\s*(?P<notes>.*))?"
)
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
    summary_lines: list[str] = []
    seen: set[str] = set()
    for scanned in scan(text.lstrip("\ufeff")):
        line = scanned.text.rstrip("\r\n")
        if scanned.kind in IN_FENCE:
            continue
        if scanned.kind == HEADING and scanned.depth == 0 and scanned.title:
            if index.title is None and scanned.level == 1:
                index.title = scanned.title
            elif scanned.level == 2:
                section = scanned.title
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
    """A contiguous slice of an llms-full corpus, from one H1/H2 (or page front matter) to the next."""

    title: str
    slug: str
    text: str
    #: the ``url:`` / ``source_url:`` of the front matter the section opens with, exactly as
    #: written (unresolved); None when the section has no front matter
    url: str | None = None


def slugify(title: str) -> str:
    """GitHub-style heading slug: lower case, punctuation dropped, spaces to ``-``."""
    title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title)  # [text](url) -> text
    slug = _SLUG_DROP.sub("", title.replace("`", "")).strip().lower()
    return re.sub(r"[\s]+", "-", slug)[:80].strip("-") or "section"


_FM_RULE = re.compile(r"^---[ \t]*\r?\n?$")
_FM_FIELD = re.compile(r"^([A-Za-z_][\w-]*)[ \t]*:[ \t]*(.*?)[ \t]*\r?\n?$")
_FM_URL_KEYS = ("url", "source_url")
#: Front matter longer than this many lines is not taken for a page's.
FRONT_MATTER_LINES = 30


def front_matter(lines: list[str], i: int) -> tuple[int, dict[str, str]] | None:
    """``(end, fields)`` when ``lines[i]`` opens page front matter naming a URL (``end``: after the closing ``---``).

    Only ``key: value`` lines between two ``---`` rules, one of them ``url:`` or
    ``source_url:``: a thematic break or a YAML document of another kind is not a page's.
    """
    if not _FM_RULE.match(lines[i]):
        return None
    fields: dict[str, str] = {}
    for j in range(i + 1, min(len(lines), i + 2 + FRONT_MATTER_LINES)):
        line = lines[j]
        if _FM_RULE.match(line):
            if any(k in fields for k in _FM_URL_KEYS):
                return j + 1, fields
            return None
        m = _FM_FIELD.match(line)
        if m:
            fields.setdefault(m.group(1).lower(), m.group(2).strip("\"'"))
        elif line.strip() and not line.startswith((" ", "\t", "-")):
            return None  # not YAML fields (a list or a continuation is tolerated)
    return None


def split_sections(text: str) -> list[Section]:
    """Split a corpus at top-level ATX H1/H2 headings (and page front matter) outside code fences.

    Lossless: ``"".join(s.text for s in sections) == text``. Text before the
    first heading is a section of its own (titled ``preamble``). A section that
    opens with front matter holding ``url:`` or ``source_url:`` (``---`` /
    ``url: /x`` / ``---``, as Docusaurus plugins write per-page corpora) owns it:
    the heading right after it does not start another section, and ``url`` is
    the raw value.
    """
    lines = split_lines(text)
    starts: list[tuple[int, str, str | None]] = []  # (line, title, front-matter url)
    pending: tuple[int, dict[str, str]] | None = None  # front matter waiting for its heading
    scanned = scan(lines)
    i = 0
    while i < len(lines):
        line = next(scanned)
        found = None if line.kind in IN_FENCE or not line.text.startswith("---") else front_matter(lines, i)
        if found is not None:
            if pending is not None:  # front matter with no heading of its own: a page still
                starts.append((pending[0], *_fm_title(pending[1])))
            pending, i = (i, found[1]), found[0]
            scanned = scan(lines[k] for k in range(i, len(lines)))  # front matter is not markdown: read afresh
            continue
        if line.starts_section and line.level <= 2 and line.title:
            starts.append((pending[0], line.title, _fm_title(pending[1])[1]) if pending else (i, line.title, None))
            pending = None
        elif pending is not None and line.kind not in IN_FENCE and not line.starts_section and line.text.strip():
            starts.append((pending[0], *_fm_title(pending[1])))  # a page that opens with prose
            pending = None
        i += 1
    if pending is not None:
        starts.append((pending[0], *_fm_title(pending[1])))
    sections: list[Section] = []
    if not starts or starts[0][0] > 0:
        end = starts[0][0] if starts else len(lines)
        pre = "".join(lines[:end])
        if pre:
            sections.append(Section("preamble", "preamble", pre))
    used: dict[str, int] = {}
    for n, (start, title, url) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(lines)
        slug = slugify(title)
        count = used.get(slug, 0)
        used[slug] = count + 1
        sections.append(Section(title, f"{slug}-{count}" if count else slug, "".join(lines[start:end]), url))
    return sections


def _fm_title(fields: dict[str, str]) -> tuple[str, str | None]:
    """A front-matter page's title (its ``title:``, else its URL's last segment) and raw URL."""
    url = next((fields[k] for k in _FM_URL_KEYS if fields.get(k)), None)
    title = fields.get("title") or (url or "").rstrip("/").rsplit("/", 1)[-1] or "page"
    return title, url


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
    return Section(first.title, first.slug, "".join(s.text for s in group), first.url)
