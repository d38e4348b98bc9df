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
    """Split a corpus at ATX H1/H2 headings (and page front matter) outside code fences.

    Lossless: ``"".join(s.text for s in sections) == text``. Text before the
    first heading is a section of its own (titled ``preamble``). A section that
    opens with front matter holding ``url:`` or ``source_url:`` (``---`` /
    ``url: /x`` / ``---``, as Docusaurus plugins write per-page corpora) owns it:
    the heading right after it does not start another section, and ``url`` is
    the raw value.
    """
    lines = text.splitlines(keepends=True)
    starts: list[tuple[int, str, str | None]] = []  # (line, title, front-matter url)
    fence: str | None = None
    pending: tuple[int, dict[str, str]] | None = None  # front matter waiting for its heading
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _FENCE.match(line)
        if m:
            marker = m.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence) and not line.strip()[len(marker):].strip():
                fence = None
            i += 1
            continue
        if fence is None and line.startswith("---"):
            found = front_matter(lines, i)
            if found is not None:
                if pending is not None:  # front matter with no heading of its own: a page still
                    starts.append((pending[0], *_fm_title(pending[1])))
                pending = (i, found[1])
                i = found[0]
                continue
        if fence is None and (h := _ATX_H12.match(line.rstrip("\r\n"))) and (h.group(2) or "").strip():
            title = h.group(2).strip()
            if pending is not None:
                starts.append((pending[0], title, _fm_title(pending[1])[1]))
                pending = None
            else:
                starts.append((i, title, None))
        elif pending is not None and line.strip() and not line.lstrip().startswith("#"):
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
