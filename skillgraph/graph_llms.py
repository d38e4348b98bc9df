"""A graph as an llms corpus: its ``llms.txt`` (table of contents) and ``llms-full.txt``.

DESIGN.md, "Output layout": every committed graph holds

* ``llms.txt`` in the shape of the llms.txt proposal: ``# name``, ``> summary``,
  then ``## section`` headings over ``- [title](file.md): description`` links, in
  the order of the pages given (site order). Sections are the first path segment
  of the page URLs under their common scope (``/library/json.html`` under
  ``/`` is in *Library*); pages at the scope itself, or a graph where every page
  is in one place, are listed under *Pages*. Every link is a file of the graph.
* ``llms-full.txt``: every page's markdown in the same order, each opened by
  front matter (``---``, ``url: <page URL>``, ``---``), so that crawling a served
  graph splits it back into its pages (the splitter's front-matter rule).

Nothing in Scrapy or the ecosystem writes llms.txt files; this is a pure function
of the pages and their files, called by the graph writer when a build commits.
Both files are written beside the pages, each to a temp file moved into place
with ``os.replace``, mode 0644.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from skillgraph.files import write_atomic
from skillgraph.markdown import HEADING, IN_FENCE, headings, scan

logger = logging.getLogger(__name__)

ROOT_SECTION = "Pages"
DESCRIPTION_CHARS = 160
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_EMPHASIS = re.compile(r"(\*\*|__)(.+?)\1")
#: A label line, not prose: ``**Source code:** [Lib/json/__init__.py](...)``.
_FIELD = re.compile(r"^(\*\*|__)[^*_]{1,40}:(\*\*|__)")


def write_graph_llms(folder: Path, name: str, pages: list[dict[str, Any]], summary: str | None = None) -> None:
    """Write ``llms.txt`` and ``llms-full.txt`` into ``folder`` for ``pages`` (``url``, ``file``, ``title``)."""
    folder = Path(folder)
    present: list[tuple[dict[str, Any], str]] = []
    for page in pages:
        path = folder / str(page["file"])
        try:
            present.append((page, path.read_text(encoding="utf-8")))
        except OSError:
            logger.warning("llms.txt of graph %s: page file %s is missing; not listed", name, page["file"])
    write_atomic(folder / "llms.txt", llms_index(name, present, summary))
    write_atomic(folder / "llms-full.txt", llms_full(present))


def llms_index(name: str, pages: list[tuple[dict[str, Any], str]], summary: str | None = None) -> str:
    """The text of ``llms.txt`` for ``(page, markdown)`` pairs, in their order."""
    urls = [str(page["url"]) for page, _ in pages]
    scope = common_scope(urls)
    if summary is None:
        where = f" from {scope}" if scope else ""
        summary = f"{len(pages)} page{'s' if len(pages) != 1 else ''} of documentation{where}, as markdown."
    sections: dict[str, list[str]] = {}
    for page, markdown in pages:
        title = str(page.get("title") or "").strip() or markdown_title(markdown) or Path(str(page["file"])).stem
        link = f"- [{_escape(title)}]({quote(str(page['file']))})"
        description = describe(markdown, title)
        sections.setdefault(section_of(str(page["url"]), scope), []).append(
            f"{link}: {description}" if description else link)
    if len(sections) == 1:
        sections = {ROOT_SECTION: next(iter(sections.values()))}
    lines = [f"# {_one_line(name)}", "", f"> {_one_line(summary)}", ""]
    for section, links in sections.items():
        lines += [f"## {section}", "", *links, ""]
    return "\n".join(lines)


def llms_full(pages: list[tuple[dict[str, Any], str]]) -> str:
    """Every page's markdown in order, each opened by ``---`` / ``url: <URL>`` / ``---`` front matter."""
    parts = []
    for page, markdown in pages:
        body = markdown.strip("\n")
        parts.append(f"---\nurl: {page['url']}\n---\n{body}\n" if body else f"---\nurl: {page['url']}\n---\n")
    return "\n".join(parts)  # a blank line before each front matter: never read as a setext underline


def common_scope(urls: list[str]) -> str:
    """The deepest directory URL (ending in ``/``) holding every URL; '' when they span origins."""
    if not urls:
        return ""
    splits = [urlsplit(url) for url in urls]
    origins = {(s.scheme, s.netloc) for s in splits}
    if len(origins) != 1:
        return ""
    dirs = [s.path.rsplit("/", 1)[0].split("/") for s in splits]  # directory segments, file name dropped
    common = dirs[0]
    for segments in dirs[1:]:
        n = 0
        while n < min(len(common), len(segments)) and common[n] == segments[n]:
            n += 1
        common = common[:n]
    scheme, netloc = splits[0].scheme, splits[0].netloc
    return f"{scheme}://{netloc}{'/'.join(common)}/"


def section_of(url: str, scope: str) -> str:
    """The section heading of ``url``: its first path segment under ``scope``, or :data:`ROOT_SECTION`."""
    path = url.split("#", 1)[0].split("?", 1)[0]
    rest = path[len(scope):] if scope and path.startswith(scope) else urlsplit(path).path.lstrip("/")
    if "/" not in rest:
        return ROOT_SECTION
    segment = rest.split("/", 1)[0]
    words = re.sub(r"[-_.]+", " ", segment).strip()
    return (words[:1].upper() + words[1:]) if words else ROOT_SECTION


def markdown_title(markdown: str) -> str:
    """The page's first H1 (in its first 4000 characters), outside code and containers."""
    return next((h.title for h in headings(markdown[:4000]) if h.level == 1 and h.depth == 0 and h.title), "")


def describe(markdown: str, title: str = "") -> str:
    """The page's first sentence-bearing paragraph line, plain, at most :data:`DESCRIPTION_CHARS` characters."""
    for scanned in scan(markdown):
        line = scanned.text.strip()
        if scanned.kind in IN_FENCE or scanned.kind == HEADING or not line \
                or line.startswith(("#", "|", ">", "---", "<", "!", "[", "- ", "* ", "+ ", "=")):
            continue
        if re.match(r"^\d+[.)]\s", line) or _FIELD.match(line):
            continue
        text = _EMPHASIS.sub(r"\2", _LINK.sub(r"\1", line)).strip()
        if len(text) < 20 or text == title:
            continue
        return _shorten(text)
    return ""


def _shorten(text: str) -> str:
    text = _one_line(text)
    if len(text) <= DESCRIPTION_CHARS:
        return text
    cut = text[: DESCRIPTION_CHARS - 1].rsplit(" ", 1)[0].rstrip(",;:")
    return cut + "…"


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _escape(title: str) -> str:
    """A link text every llms.txt reader parses: brackets (which many readers cannot escape) become parentheses."""
    return _one_line(title).replace("[", "(").replace("]", ")")
