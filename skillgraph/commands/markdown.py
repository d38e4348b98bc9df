"""``scrapy markdown FILE.html [...] [-o DIR]``: saved HTML pages to markdown.

Runs the project's extractor (:mod:`skillgraph.extract`) on files, with no
crawl: one ``.md`` per input in ``DIR``, or the markdown on stdout when there
is a single input and no ``-o``.  ``--url`` says where the page came from, so
relative links are made absolute as they would be in a crawl; without it
relative links stay relative (they still resolve next to the saved file).
"""

from __future__ import annotations

import os
import sys
import tempfile
from argparse import ArgumentParser, Namespace
from pathlib import Path

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from skillgraph.extract import extract_html

_HTML_SUFFIXES = (".html", ".htm", ".xhtml")


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


def write_atomically(target: Path, text: str) -> None:
    """Write to a temporary file beside ``target`` and move it into place."""
    fd, tmp = tempfile.mkstemp(prefix=".", suffix=".md.tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
        out_dir = Path(opts.output) if opts.output else None
        if out_dir is not None:
            out_dir.mkdir(parents=True, exist_ok=True)
        taken: set[str] = set()
        for name in args:
            path = Path(name)
            try:
                extraction = extract_html(path.read_bytes(), opts.url)
            except OSError as exc:
                print(f"{name}: {exc.strerror or exc}", file=sys.stderr)
                self.exitcode = 1
                continue
            if out_dir is None:
                sys.stdout.write(extraction.markdown)
            else:
                target = out_dir / output_name(path, taken)
                write_atomically(target, extraction.markdown)
                print(target)
        sys.stdout.flush()
