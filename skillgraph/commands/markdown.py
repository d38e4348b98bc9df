"""``scrapy markdown FILE.html [...] [-o DIR]``: saved HTML pages to markdown.

Runs the project's extractor (:mod:`skillgraph.extract`) on files, with no
crawl: one ``.md`` per input in ``DIR``, or the markdown on stdout when there
is a single input and no ``-o``.  ``--url`` says where the page came from, so
relative links are made absolute as they would be in a crawl; without it
relative links stay relative (they still resolve next to the saved file).

Input that is not text (random bytes, an image, an archive) is refused with one
line on stderr and exit status 1, never turned into pages of mojibake; files
written with ``-o`` are mode 0644.
"""

from __future__ import annotations

import codecs
import logging
import sys
from argparse import ArgumentParser, Namespace
from pathlib import Path

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from skillgraph.commands.settings_check import exit_on_bad_settings
from skillgraph.extract import extract_html
from skillgraph.files import write_atomic

logger = logging.getLogger(__name__)

_HTML_SUFFIXES = (".html", ".htm", ".xhtml")
#: C0 control characters that never occur in text (tab, LF, VT, FF, CR and ESC may).
_CONTROL = frozenset(range(32)) - {9, 10, 11, 12, 13, 27}
_SNIFF_BYTES = 65536
_MIN_SNIFF = 256  #: below this, too few bytes to judge an encoding: only NUL and control bytes count


def not_text(data: bytes) -> str:
    """'' when ``data`` reads as text (HTML, markdown, plain), else why not.

    NUL bytes (outside a UTF-16/32 byte order mark) or more than 1% of C0 control
    characters in the first 64 KB mean binary data: an image, an archive, random bytes.
    Bytes that are not UTF-8 may still be text in a legacy encoding (latin-1,
    cp1251, Shift-JIS), and any such text, markup or prose, has a space or a line
    break every few dozen bytes; random bytes without control characters have at
    most one in 224, so fewer than 1% is not text either (it would come out as
    pages of mojibake).
    """
    head = data[:_SNIFF_BYTES]
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE, codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        return ""
    if b"\x00" in head:
        return "binary data (NUL bytes)"
    controls = sum(1 for byte in head if byte in _CONTROL)
    if head and controls * 100 > len(head):
        return f"binary data ({controls} control bytes in the first {len(head)})"
    if len(head) >= _MIN_SNIFF and not _utf8(head, cut=len(data) > len(head)):
        spaces = sum(head.count(byte) for byte in (b" ", b"\t", b"\n", b"\r"))
        if spaces * 100 < len(head):
            return f"not UTF-8 nor text in another encoding: {spaces} spaces or line breaks in {len(head)} bytes"
    return ""


def _utf8(head: bytes, cut: bool) -> bool:
    """Is ``head`` UTF-8? A sequence cut off by the sniffing window (``cut``) does not count against it."""
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return cut and exc.start >= len(head) - 3 and exc.reason == "unexpected end of data"
    return True


def output_name(path: Path, taken: set[str]) -> str:
    """``page.html`` -> ``page.md``; a name already used gets ``-2``, ``-3``..."""
    stem = path.name
    for suffix in _HTML_SUFFIXES:
        if stem.lower().endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    name, n = f"{stem}.md", 1
    while name in taken:
        n += 1
        name = f"{stem}-{n}.md"
    taken.add(name)
    return name


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "FILE.html [FILE.html ...] [-o DIR]"

    def short_desc(self) -> str:
        return "Convert saved HTML pages to markdown with the project's extractor"

    def add_options(self, parser: ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("-o", "--output", metavar="DIR", default=None,
                            help="write one .md per input into DIR (created if missing)")
        parser.add_argument("--url", default=None,
                            help="URL the page was fetched from (makes relative links absolute)")

    def run(self, args: list[str], opts: Namespace) -> None:
        if not args:
            raise UsageError("give at least one HTML FILE")
        if opts.output is None and len(args) > 1:
            raise UsageError("several FILEs need -o DIR (stdout takes a single file)")
        assert self.settings is not None
        exit_on_bad_settings(self.settings)
        out_dir = Path(opts.output) if opts.output else None
        if out_dir is not None:
            out_dir.mkdir(parents=True, exist_ok=True)
        taken: set[str] = set()
        for name in args:
            path = Path(name)
            try:
                data = path.read_bytes()
            except OSError as exc:
                print(f"error: {name}: {exc.strerror or exc}", file=sys.stderr)
                self.exitcode = 1
                continue
            why = not_text(data)
            if why:
                print(f"error: {name} is not an HTML or text file ({why}); nothing written", file=sys.stderr)
                self.exitcode = 1
                continue
            try:
                extraction = extract_html(data, opts.url)
            except Exception as exc:  # one line for the user, the traceback at DEBUG
                logger.debug("extraction of %s failed", name, exc_info=True)
                print(f"error: {name}: extraction failed ({type(exc).__name__}: {exc})", file=sys.stderr)
                self.exitcode = 1
                continue
            if out_dir is None:
                sys.stdout.write(extraction.markdown)
            else:
                target = out_dir / output_name(path, taken)
                write_atomic(target, extraction.markdown)
                print(target)
        sys.stdout.flush()
