"""DownloadErrorLines: a site that does not answer is one log line, not a traceback (DESIGN.md, exit codes).

Scrapy's robots.txt middleware logs a failed robots.txt download at ERROR with
the whole exception chain: a refused connection printed two 30-line
tracebacks before the crawl's one-line failure, and a user reads a traceback
as a crash. The ERROR line itself already names the exception ("Error
downloading <GET ...>: Connection was refused ..."), so this extension keeps
that line and moves the traceback to a DEBUG record (DESIGN.md: "tracebacks
go to the log at DEBUG"), where ``-L DEBUG`` still shows it.

It is a :class:`logging.Filter` on the loggers of :data:`LOGGERS` only, added
when the crawler is built and removed when its engine stops: other loggers'
tracebacks (a bug in a callback) stay where Scrapy puts them.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import signals

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

#: Loggers whose ERROR records with a traceback report a failed download, not a bug.
LOGGERS = ("scrapy.downloadermiddlewares.robotstxt",)


class ChainToDebug(logging.Filter):
    """Let the record through without its traceback; log the traceback at DEBUG on the same logger."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.levelno > logging.DEBUG:
            exc_info = record.exc_info
            record.exc_info, record.exc_text = None, None
            logging.getLogger(record.name).debug("Exception chain of the error above (%s)", record.getMessage(),
                                                 exc_info=exc_info)
        return True


class DownloadErrorLines:
    def __init__(self, crawler: Crawler) -> None:
        self.filter = ChainToDebug()
        for name in LOGGERS:
            logging.getLogger(name).addFilter(self.filter)
        crawler.signals.connect(self.engine_stopped, signal=signals.engine_stopped)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> DownloadErrorLines:
        return cls(crawler)

    def engine_stopped(self) -> None:
        for name in LOGGERS:
            logging.getLogger(name).removeFilter(self.filter)
