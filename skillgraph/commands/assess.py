"""``scrapy assess FILE [...]``: run the quality gates on saved pages, one JSON line each.

Needs no crawler: :func:`skillgraph.quality.assess` is pure. HTML files are
extracted with the project's extractor first; ``.md``/``.txt`` files are judged
as markdown. ``--status`` and ``--url`` stand in for the response the file came from.

A file that is not text (random bytes, an image) is not assessed: its JSON line
carries ``"error"``, one line on stderr says why, and the exit status is 1.
"""

from __future__ import annotations

import json
import sys
from argparse import ArgumentParser, Namespace
from pathlib import Path
from typing import Any

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from skillgraph.commands.markdown import not_text
from skillgraph.commands.settings_check import exit_on_bad_settings
from skillgraph.quality import DEFAULT_THRESHOLD, assess


class NotTextError(ValueError):
    """The file is binary data, not a page."""

MARKDOWN_SUFFIXES = (".md", ".markdown", ".txt")


def assess_file(path: Path, status: int, url: str | None, threshold: float) -> dict[str, Any]:
    data = path.read_bytes()
    why = not_text(data)
    if why:
        raise NotTextError(why)
    text = data.decode("utf-8", errors="replace")
    if path.suffix.lower() in MARKDOWN_SUFFIXES:
        result = assess(None, markdown=text, status=status, url=url, threshold=threshold)
    else:
        result = assess(text, status=status, url=url or path.resolve().as_uri(), threshold=threshold)
    return {"path": str(path), **result.to_json()}


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "FILE [FILE ...]"

    def short_desc(self) -> str:
        return "Run the quality gates on saved pages; one JSON line per file"

    def add_options(self, parser: ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--status", type=int, default=200, help="HTTP status the pages came with (default 200)")
        parser.add_argument("--url", default=None, help="URL the page came from (resolves relative links)")
        parser.add_argument("--threshold", type=float, default=None,
                            help="pass threshold (default SKILLGRAPH_QUALITY_THRESHOLD)")

    def run(self, args: list[str], opts: Namespace) -> None:
        if not args:
            raise UsageError("give at least one FILE")
        assert self.settings is not None
        exit_on_bad_settings(self.settings)
        threshold = opts.threshold
        if threshold is None:
            threshold = self.settings.getfloat("SKILLGRAPH_QUALITY_THRESHOLD", DEFAULT_THRESHOLD)
        for name in args:
            path = Path(name)
            try:
                line = assess_file(path, opts.status, opts.url, threshold)
            except OSError as exc:
                line = {"path": name, "error": f"{type(exc).__name__}: {exc.strerror or exc}"}
                print(f"error: {name}: {exc.strerror or exc}", file=sys.stderr)
                self.exitcode = 1
            except NotTextError as exc:
                line = {"path": name, "error": f"not an HTML or text file: {exc}"}
                print(f"error: {name} is not an HTML or text file ({exc}); not assessed", file=sys.stderr)
                self.exitcode = 1
            print(json.dumps(line, ensure_ascii=False))
        sys.stdout.flush()
