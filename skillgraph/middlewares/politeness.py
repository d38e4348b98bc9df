"""Politeness Scrapy leaves out: robots.txt ``Crawl-delay`` and ``Retry-After``.

``ROBOTSTXT_OBEY`` + protego decide what may be fetched, but Scrapy ignores the
``Crawl-delay`` protego parses, and ``RetryMiddleware`` retries a 429/503 at once
whatever its ``Retry-After`` says. This middleware:

* listens to ``robots_parsed`` and makes the domain's ``Crawl-delay`` (for our
  User-Agent) the delay of its download slot, without jitter, so requests are at
  least that far apart (capped by ``SKILLGRAPH_POLITENESS_MAX_CRAWL_DELAY``; a
  delay below ``DOWNLOAD_DELAY`` changes nothing);
* on a 429/503 with ``Retry-After`` (seconds or an HTTP date) that will be
  retried, backs the whole slot off and holds the retry for that long (capped by
  ``SKILLGRAPH_POLITENESS_MAX_RETRY_AFTER``), on the reactor's clock: nothing blocks;
* keeps AutoThrottle (on by default, ``skillgraph/addon.py``) from undoing either:
  AutoThrottle moves a slot's delay towards the host's latency after every
  response, which would soon bring a 10 s ``Crawl-delay`` down to a fast host's
  0.25 s. Requests to a host with a ``Crawl-delay`` or inside a ``Retry-After``
  hold carry Scrapy's ``autothrottle_dont_adjust_delay`` meta key.

It runs at 560, just before ``RetryMiddleware`` (550) sees the response.
"""

from __future__ import annotations

import logging
import time
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import call_later
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet import task

from skillgraph.compat.scrapy import per_slot_settings, set_slot_delay, set_slot_last_seen, slot_delay, slot_of

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

_BACK_OFF_CODES = (429, 503)


def parse_retry_after(value: str, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value (delta-seconds or HTTP-date); None if unusable."""
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None or when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class PolitenessMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        if not settings.getbool("SKILLGRAPH_POLITENESS_ENABLED", True):
            raise NotConfigured("SKILLGRAPH_POLITENESS_ENABLED is False")
        self.crawler = crawler
        self.max_crawl_delay = settings.getfloat("SKILLGRAPH_POLITENESS_MAX_CRAWL_DELAY", 60.0)
        self.max_retry_after = settings.getfloat("SKILLGRAPH_POLITENESS_MAX_RETRY_AFTER", 120.0)
        self.user_agent = str(settings.get("ROBOTSTXT_USER_AGENT") or settings.get("USER_AGENT") or "")
        self.retry_enabled = settings.getbool("RETRY_ENABLED")
        self.retry_codes = {int(c) for c in settings.getlist("RETRY_HTTP_CODES")}
        self.max_retry_times = settings.getint("RETRY_TIMES")
        self.download_delay = settings.getfloat("DOWNLOAD_DELAY")
        self.crawl_delays: dict[str, float] = {}  # slot key -> seconds
        self.held_until: dict[str, float] = {}  # slot key -> time.monotonic() its Retry-After hold ends
        self._logged: set[str] = set()
        crawler.signals.connect(self.robots_parsed, signal=signals.robots_parsed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    # Crawl-delay ---------------------------------------------------------------

    def robots_parsed(self, robotparser: Any, request: Request) -> None:
        crawl_delay = getattr(robotparser, "crawl_delay", None)
        if crawl_delay is None:
            return
        try:
            delay = crawl_delay((request.headers.get(b"User-Agent") or b"").decode("latin-1") or self.user_agent)
        except Exception:
            logger.debug("No usable Crawl-delay in robots.txt of %s", request.url, exc_info=True)
            return
        if not delay or delay <= 0:
            return
        assert self.crawler.engine is not None and self.crawler.stats is not None
        downloader = self.crawler.engine.downloader
        key = downloader.get_slot_key(request)
        if delay > self.max_crawl_delay:
            logger.warning("Crawl-delay %s s of %s capped at %s s", delay, key, self.max_crawl_delay)
            self.crawler.stats.inc_value("skillgraph/politeness/crawl_delay_capped")
            delay = self.max_crawl_delay
        self.crawl_delays[key] = delay
        # New slots for the key (Scrapy collects idle ones) start from this delay too.
        slot_settings = per_slot_settings(downloader).setdefault(key, {})
        if delay > float(slot_settings.get("delay", self.download_delay)):
            slot_settings.update(delay=delay, jitter=0.0)
        slot = slot_of(downloader, key)
        if slot is not None and delay > slot_delay(slot):
            set_slot_delay(slot, delay, jitter=0.0)
        self.crawler.stats.inc_value("skillgraph/politeness/crawl_delay")
        logger.info("Crawl-delay of %s: %s s between requests", key, delay)

    def process_request(self, request: Request) -> None:
        """A host with a Crawl-delay, or held by a Retry-After: AutoThrottle must not shorten its delay."""
        assert self.crawler.engine is not None
        key = self.crawler.engine.downloader.get_slot_key(request)
        if key in self.crawl_delays or self.held_until.get(key, 0.0) > time.monotonic():
            request.meta["autothrottle_dont_adjust_delay"] = True

    # Retry-After ----------------------------------------------------------------

    async def process_response(self, request: Request, response: Response) -> Response:
        if response.status not in _BACK_OFF_CODES or b"Retry-After" not in response.headers:
            return response
        wait = parse_retry_after((response.headers.get(b"Retry-After") or b"").decode("latin-1"))
        if wait is None or not self._will_retry(request, response):
            return response
        assert self.crawler.stats is not None
        if wait > self.max_retry_after:
            self.crawler.stats.inc_value("skillgraph/politeness/retry_after_capped")
            wait = self.max_retry_after
        self.crawler.stats.inc_value("skillgraph/politeness/retry_after")
        host = urlparse_cached(request).netloc
        if host not in self._logged:
            self._logged.add(host)
            logger.warning("%s answered %d with Retry-After: waiting %.1f s before retrying", host,
                           response.status, wait)
        self._back_off(request, wait)
        from twisted.internet import reactor

        await maybe_deferred_to_future(task.deferLater(reactor, wait, lambda: None))
        return response

    def _will_retry(self, request: Request, response: Response) -> bool:
        if not self.retry_enabled or request.meta.get("dont_retry") or response.status not in self.retry_codes:
            return False
        return int(request.meta.get("retry_times", 0)) < int(request.meta.get("max_retry_times", self.max_retry_times))

    def _back_off(self, request: Request, wait: float) -> None:
        """Hold the host's other requests too: its slot sends nothing for ``wait`` seconds."""
        assert self.crawler.engine is not None
        slot = slot_of(self.crawler.engine.downloader, request.meta.get("download_slot", ""))
        if slot is None:
            return
        original = slot_delay(slot)
        set_slot_delay(slot, max(original, wait))
        set_slot_last_seen(slot, time.monotonic())
        key = str(request.meta.get("download_slot", ""))
        self.held_until[key] = max(self.held_until.get(key, 0.0), time.monotonic() + wait)

        def restore() -> None:
            if slot_delay(slot) == max(original, wait):
                set_slot_delay(slot, original)

        call_later(wait, restore)
