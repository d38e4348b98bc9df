"""Links between the pages of one graph, pointed at the graph's own files.

A skill graph is read as a folder: by an agent opening files, an editor, a
static site generator.  A link to another page of the same build is worth
more as that page's file (``library-json.md#json.dumps``) than as its web
URL: it stays inside the graph, works offline and shows the reader the page
is there.  Links to pages outside the graph stay absolute.  Fragments are
kept, since they name the place on the page.  Relative links, which pages
from markdown sources (``.md`` twins, llms-full sections) carry as the site
wrote them and which mean nothing inside the graph's folder, are resolved
against the page's URL first: every link ends up a file of the graph, an
absolute URL, or an ``#anchor`` of the page itself.

Only link destinations in prose are touched: fenced code and inline code
spans are copied byte for byte (a ``[x](url)`` there is code, not a link).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from urllib.parse import urljoin

from skillgraph.files import write_atomic
from skillgraph.items import sha256_text
from skillgraph.markdown import IN_FENCE, scan
from skillgraph.urls import page_key

_CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)")
_LINK_DEST = re.compile(r"\]\(([^()\s]+)\)")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def _rewrite_prose(text: str, target: Callable[[str], str | None]) -> tuple[str, int]:
    count = 0

    def link(match: re.Match[str]) -> str:
        nonlocal count
        new = target(match.group(1))
        if new is None or new == match.group(1):
            return match.group(0)
        count += 1
        return f"]({new})"

    parts, last = [], 0
    for span in _CODE_SPAN.finditer(text):
        parts.append(_LINK_DEST.sub(link, text[last : span.start()]))
        parts.append(span.group(0))
        last = span.end()
    parts.append(_LINK_DEST.sub(link, text[last:]))
    return "".join(parts), count


def rewrite_links(markdown: str, target: Callable[[str], str | None]) -> tuple[str, int]:
    """``markdown`` with each prose link destination ``d`` replaced by ``target(d)`` when not None.

    Returns the new text and how many links were rewritten.
    """
    out: list[str] = []
    prose: list[str] = []
    total = 0

    def flush() -> None:
        nonlocal total
        if prose:
            text, n = _rewrite_prose("".join(prose), target)
            out.append(text)
            total += n
            prose.clear()

    for line in scan(markdown):  # fenced code, also in quotes and list items, is copied as it is
        if line.kind in IN_FENCE:
            flush()
            out.append(line.text)
        else:
            prose.append(line.text)
    flush()
    return "".join(out), total


def rewrite_files(folder: Path, pages: list[tuple[str, str]], links: LocalLinks) -> list[tuple[str, str, int]]:
    """Rewrite the links of ``pages`` (``(url, file)`` pairs) in their files under ``folder``, in place.

    Returns ``(file, sha256 of the new text, links rewritten)`` for each file
    that changed. A pure function of its arguments and the files, so a build's
    commit can hand chunks of its pages to worker processes.
    """
    changed = []
    for url, file in pages:
        path = folder / file
        text, count = rewrite_links(path.read_text("utf-8"), partial(links.target, base=url))
        if count:
            write_atomic(path, text)
            changed.append((file, sha256_text(text), count))
    return changed


class LocalLinks:
    """Maps the URLs of a build's pages to its files, for :func:`rewrite_links`.

    ``pages`` are ``(url, file)`` pairs.  A page's URL without its fragment is
    its key, except for sections of an llms-full corpus, which share one URL
    and differ by fragment: those are known by their full URL only.  ``aliases``
    are URLs not written because their content was already written under
    another URL (``/docs/`` and ``/docs/index.html``).  ``old_files`` maps the
    file names of the previous build to URLs, so a page carried over from it
    (whose links already point at files) follows renamed files.
    """

    def __init__(self, pages: Iterable[tuple[str, str]], aliases: dict[str, str] | None = None,
                 old_files: dict[str, str] | None = None) -> None:
        self.by_key: dict[str, str] = {}
        self.by_url: dict[str, str] = {}
        for url, file in pages:
            if "#" in url:
                self.by_url[url] = file
            else:
                self.by_key.setdefault(url, file)
        for alias, url in (aliases or {}).items():
            written = self._file_of(url)
            if written:
                self.by_key.setdefault(page_key(alias), written.partition("#")[0])
        self.old_files = old_files or {}

    def _file_of(self, url: str) -> str | None:
        """The file of the graph's page at ``url``, with ``url``'s fragment; None when not in the graph."""
        file = self.by_url.get(url)
        if file:
            return file
        key, _, fragment = url.partition("#")
        file = self.by_key.get(key)
        return None if file is None else file + (f"#{fragment}" if fragment else "")

    def target(self, dest: str, base: str | None = None) -> str | None:
        """What ``dest``, a link on the page at ``base``, should point at; None to leave it as it is.

        A page of the graph: its file (with the fragment). Elsewhere: the
        absolute URL, resolved against ``base`` when relative.
        """
        if dest.startswith(("http://", "https://")):
            return self._file_of(dest)
        name, sep, fragment = dest.partition("#")
        url = self.old_files.get(name)  # a file of the previous build (a carried-over page)
        if url is not None:
            file = self._file_of(url)
            if file is None:  # the page left the graph: back to its web address
                return page_key(url) + sep + fragment if sep else url
            return file.partition("#")[0] + sep + fragment if sep else file
        if base is None or not name or _SCHEME.match(dest):
            return None  # an #anchor of this page, mailto:, ...
        try:
            absolute = urljoin(base, dest)
        except ValueError:
            return None
        if not absolute.startswith(("http://", "https://")):
            return None
        return self.target(absolute) or absolute
