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

Finding them takes a scan of the markdown's blocks. The page workers have
that scan at hand when they assess a page, so they note where each prose link
destination starts (:func:`link_offsets`, a few bytes a page) and the commit
only splices (:func:`rewrite_at`); a page without offsets (a carried-over
page, a fleet's assembly, a markdown twin) is scanned at commit.
"""

from __future__ import annotations

import hashlib
import os
import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from urllib.parse import urljoin

from skillgraph.files import write_all
from skillgraph.items import sha256_text
from skillgraph.markdown import CODE_SPAN, IN_FENCE, Line, outside_code_spans, scan
from skillgraph.urls import page_key

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

    return outside_code_spans(text, lambda prose: _LINK_DEST.sub(link, prose)), count


def rewrite_links(markdown: str, target: Callable[[str], str | None]) -> tuple[str, int]:
    """``markdown`` with each prose link destination ``d`` replaced by ``target(d)`` when not None.

    Returns the new text and how many links were rewritten.
    """
    out: list[str] = []
    total = last = 0
    for start, end in prose_runs(scan(markdown)):  # fenced code, also in quotes and list items, is copied as it is
        text, n = _rewrite_prose(markdown[start:end], target)
        out += (markdown[last:start], text)
        total += n
        last = end
    out.append(markdown[last:])
    return "".join(out), total


def link_offsets(markdown: str, lines: Iterable[Line] | None = None) -> bytes:
    """Where each prose link destination of ``markdown`` starts, as :func:`rewrite_links` finds them.

    ``lines`` is ``markdown``'s :func:`~skillgraph.markdown.scan` when done already. The offsets are
    kept as varint-coded gaps: one or two bytes a link. The page workers note them for every page,
    so what needs no scan is not scanned: a page without ``](`` has no link, and one without a
    fence run (three backticks or tildes) has no fenced line, so all of it is one run of prose.
    """
    if "](" not in markdown:
        return b""
    found: list[int] = []
    if "```" not in markdown and "~~~" not in markdown:  # no fence can open: no scan needed
        _prose_links(markdown, 0, len(markdown), found)
        return _encode(found)
    for start, end in prose_runs(scan(markdown) if lines is None else lines):
        _prose_links(markdown, start, end, found)
    return _encode(found)


def prose_runs(lines: Iterable[Line]) -> Iterator[tuple[int, int]]:
    """``(start, end)`` offsets of each run of lines outside fenced code, in the text ``lines`` scan."""
    position = 0
    prose: int | None = None  # where the current run of prose lines starts
    for line in lines:
        if line.kind in IN_FENCE:
            if prose is not None:
                yield prose, position
                prose = None
        elif prose is None:
            prose = position
        position += len(line.text)
    if prose is not None:
        yield prose, position


#: A destination (or what could start one) with a backtick in it: the two passes of :func:`_rewrite_prose` are needed.
_DEST_TICK = re.compile(r"\]\([^()\s]*`")


def _prose_links(text: str, start: int, end: int, found: list[int]) -> None:
    """The destinations of ``text[start:end]`` outside code spans (the spans :func:`_rewrite_prose` skips).

    :func:`_rewrite_prose` finds the code spans of the whole run, then links between them. When no
    destination holds a backtick, the links found in the whole run are the same: a link holds no
    backtick, so it is all inside a code span or all outside every one, and those inside are dropped.
    The run is read in place (``pos``/``endpos``: the patterns look at nothing outside the range they
    match in, so that equals reading a copy of it).
    """
    dests = [m.start(1) for m in _LINK_DEST.finditer(text, start, end)]
    if not dests:
        return
    if text.find("`", start, end) < 0:  # no code span in the run
        found.extend(dests)
        return
    if _DEST_TICK.search(text, start, end) is not None:  # a backtick in a destination could open a span
        _prose_links_two_passes(text, start, end, found)
        return
    spans = [m.span() for m in CODE_SPAN.finditer(text, start, end)]
    if not spans:
        found.extend(dests)
        return
    starts = [s for s, _ in spans]
    for dest in dests:
        i = bisect_right(starts, dest) - 1
        if i < 0 or dest >= spans[i][1]:
            found.append(dest)


def _prose_links_two_passes(text: str, start: int, end: int, found: list[int]) -> None:
    """:func:`_prose_links` as :func:`_rewrite_prose` reads prose: code spans first, then links between them."""
    segment = text[start:end]
    last = 0
    for span in CODE_SPAN.finditer(segment):
        found.extend(start + m.start(1) for m in _LINK_DEST.finditer(segment, last, span.start()))
        last = span.end()
    found.extend(start + m.start(1) for m in _LINK_DEST.finditer(segment, last))


def _encode(offsets: list[int]) -> bytes:
    out = bytearray()
    previous = 0
    for offset in offsets:
        gap, previous = offset - previous, offset
        while gap >= 0x80:
            out.append(gap & 0x7F | 0x80)
            gap >>= 7
        out.append(gap)
    return bytes(out)


def _decode(data: bytes) -> Iterable[int]:
    offset = gap = shift = 0
    for byte in data:
        gap |= (byte & 0x7F) << shift
        if byte & 0x80:
            shift += 7
            continue
        offset += gap
        yield offset
        gap = shift = 0


def rewrite_at(text: str, offsets: bytes, target: Callable[[str], str | None]) -> tuple[str, int]:
    """:func:`rewrite_links` of ``text`` whose prose link destinations start at ``offsets`` (:func:`link_offsets`)."""
    parts: list[str] = []
    last = count = 0
    for start in _decode(offsets):
        end = text.index(")", start)
        dest = text[start:end]
        new = target(dest)
        if new is None or new == dest:
            continue
        parts.append(text[last:start])
        parts.append(new)
        last = end
        count += 1
    if not count:
        return text, 0
    parts.append(text[last:])
    return "".join(parts), count


#: A page to rewrite: ``(url, file)``, or with the offsets of its links and the hash of the text they were read in.
PageFile = tuple[str, str] | tuple[str, str, bytes, str]


def rewrite_files(folder: Path, pages: list[PageFile], links: LocalLinks) -> list[tuple[str, str, int]]:
    """Rewrite the links of ``pages`` in their files under ``folder``, in place.

    Returns ``(file, sha256 of the new text, links rewritten)`` for each file
    that changed. A pure function of its arguments and the files, so a build's
    commit can hand chunks of its pages to worker processes. A page given with
    its link offsets is spliced when its file still holds the text they were
    read in (its hash says so), else scanned. A destination whose target
    needs no base is resolved once a chunk (:class:`_Targets`). The file is read as
    ``Path.read_text`` reads it (universal newlines) and overwritten with
    :func:`_overwrite`: ``folder`` is a staging build no one reads yet.
    """
    changed = []
    targets = _Targets(links)  # each destination that needs no base resolved once a chunk
    for page in pages:
        url, file = page[0], page[1]
        path = folder / file
        data = path.read_bytes()
        text = data.decode("utf-8")
        if "\r" in text:  # Path.read_text's universal newlines
            text = text.replace("\r\n", "\n").replace("\r", "\n")
            digest = sha256_text(text)
        else:
            digest = hashlib.sha256(data).hexdigest()
        targets.base = url
        if len(page) == 4 and digest == page[3]:
            text, count = rewrite_at(text, page[2], targets.__getitem__)
        else:
            text, count = rewrite_links(text, targets.__getitem__)
        if count:
            payload = text.encode("utf-8")
            _overwrite(path, payload)
            changed.append((file, hashlib.sha256(payload).hexdigest(), count))
    return changed


class _Targets(dict[str, "str | None"]):
    """``links.target(dest, base=self.base)`` looked up as ``self[dest]``.

    A docs site names the same pages from every page: an answer that needs no base (an absolute
    ``http(s)`` destination, an ``#anchor`` when no file of the previous build is named ``""``) is
    kept, so that a chunk resolves each once and every later occurrence is a dict lookup in C; any
    other destination is resolved against the page each time.
    """

    def __init__(self, links: LocalLinks) -> None:
        super().__init__()
        self.links = links
        self.base: str | None = None
        self.anchors_free = "" not in links.old_files  # an #anchor then means this page, whatever the page

    def __missing__(self, dest: str) -> str | None:
        new = self.links.target(dest, base=self.base)
        if dest.startswith(("http://", "https://")) or (dest.startswith("#") and self.anchors_free):
            self[dest] = new
        return new


_OVERWRITE_FLAGS = os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _overwrite(path: Path, payload: bytes) -> None:
    """Write ``payload`` over the file at ``path`` (which exists) in place, then cut it to its length.

    Not :func:`~skillgraph.files.write_atomic`: the files rewritten are in the build's staging folder, which
    becomes visible only when the commit switches the graph's symlink to it (a failed write fails the build).
    A new file renamed over the old one cost 0.2-0.35 ms of CPU a page on the Python docs, most of it in the
    kernel (a new inode, and ext4 allocating at the rename the blocks of data not yet on disk: its
    ``auto_da_alloc``, which a truncation to zero sets off too); overwriting the page-cache pages of the file
    just written costs 0.03. ``O_NOFOLLOW``: a page file is never a symlink.
    """
    fd = os.open(path, _OVERWRITE_FLAGS)
    try:
        write_all(fd, payload)
        os.ftruncate(fd, len(payload))
    finally:
        os.close(fd)


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
