"""``REDIS_URL``: which values are accepted, how they are shown, how a refusal is told, and the one look at
Redis when a crawl opens.

:func:`redis_at_start` is the one look at Redis when a crawl opens, shared by
every component that would use it (the scheduler, the dual write, shared
detection). It waits up to ``SKILLGRAPH_DISTRIBUTED_CONNECT_TIMEOUT`` seconds
(asyncio: the reactor runs on) for Redis to answer. If it does not, the crawl
runs as in local mode — Scrapy's scheduler, documents on disk only — and says
so once: one warning, ``skillgraph/distributed/redis_unavailable``, a
``sources.json`` warning. ``scrapy replay`` queues the documents later.
A refused password or ACL is no outage: it is not waited for, it is said in
one error line (:func:`redis_refused`), and ``scrapy crawl`` stops the crawl
before its first request and exits 1.

Every component that reads ``REDIS_URL`` hands it to redis-py unchanged
(``Redis.from_url``, scrapy-redis's ``get_redis``): ``redis://``, ``rediss://``
(TLS, with redis-py's ``ssl_*`` query arguments such as ``ssl_ca_certs``) and
``unix://``, credentials included (``redis://:PASSWORD@host`` or an ACL user,
``redis://USER:PASSWORD@host``). This module adds nothing to that contract; it
only

* checks the shape once, at start (:func:`url_problem`, for
  ``skillgraph.commands.settings_check``), with redis-py's own parser, so a value the
  check accepts is one redis-py accepts;
* keeps the password out of every message: logs name Redis by
  :func:`redis_location` (``host:port/db``), and where
  the whole value must be shown (an invalid setting) it is :func:`redacted`;
* tells a refused password from an outage (:func:`refusal`). redis-py raises
  ``AuthenticationError``, a ``ConnectionError`` subclass, so code that waits
  for Redis to come back would otherwise wait forever for a password that
  will not change; every command says :func:`refusal_sentence` instead and
  exits 1.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
from typing import TYPE_CHECKING
from urllib.parse import urlsplit
from weakref import WeakKeyDictionary

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

SCHEMES = ("redis", "rediss", "unix")
ALLOWED = "a Redis URL: redis://[USER:PASSWORD@]HOST[:PORT][/DB], rediss://... for TLS, or unix://[:PASSWORD@]/PATH"
_QUERY_SECRET = re.compile(r"(?i)([?&](?:password|ssl_password)=)[^&#]*")


class RedisRefused(str):
    """The answer of :func:`wait_for_redis` when Redis refused us: the sentence to say.

    A ``str``, so callers that only log the error need not know; :func:`redis_refused`
    and the crawl command tell it apart to stop instead of waiting for Redis.
    """


def url_problem(url: str) -> str | None:
    """None when redis-py can use ``url``; else what is wrong, in words that never repeat the URL."""
    from redis.connection import parse_url

    parts = urlsplit(url)
    if parts.scheme not in SCHEMES:
        return "the scheme must be redis://, rediss:// for TLS, or unix://"
    try:
        parse_url(url)
        port = parts.port  # redis-py reads it lazily for unix://; a bad one is always a mistake
    except ValueError:  # its message may quote part of the URL: a password with an unescaped '/' or '#'
        return "the URL does not parse: a password with '/', '#', '?' or '@' must be percent-encoded"
    if parts.scheme != "unix" and not parts.hostname:
        return "the URL names no host"
    if port == 0:
        return "the port must be 1-65535"
    db = parts.path.strip("/")
    if parts.scheme != "unix" and db and not db.isdigit():
        return "the path after the host must be a database number such as /0"
    return None


def redacted(url: str) -> str:
    """``url`` with its password (and any lone user-info token, which may be one) replaced by ``***``."""
    shown = _QUERY_SECRET.sub(r"\1***", url)
    scheme, sep, rest = shown.partition("://")
    if not sep or "@" not in rest:
        return shown
    userinfo, _, host = rest.rpartition("@")
    user, colon, _ = userinfo.partition(":")
    return f"{scheme}://{user + ':***' if colon else '***'}@{host}"


def refusal(exc: BaseException) -> str | None:
    """``"credentials"`` or ``"permission"`` when Redis refused us rather than failed to answer, else None."""
    from redis.exceptions import AuthenticationError, AuthenticationWrongNumberOfArgsError, NoPermissionError

    if isinstance(exc, (AuthenticationError, AuthenticationWrongNumberOfArgsError)):
        return "credentials"
    if isinstance(exc, NoPermissionError):
        return "permission"
    text = str(exc)
    if text.startswith(("NOAUTH", "WRONGPASS")):
        return "credentials"
    return "permission" if text.startswith("NOPERM") else None


def refusal_sentence(url: str, exc: BaseException) -> str:
    """One sentence: Redis refused us, and what to do (the server's answer holds no secret; the URL is not shown)."""
    where = redis_location(url)
    answer = str(exc).rstrip(".") or type(exc).__name__
    if refusal(exc) == "permission":
        return (f"Redis at {where} refused a command to the ACL user of REDIS_URL ({answer}); give that user "
                "the worker ACL of docs/distributed.md")
    scheme = urlsplit(url).scheme if urlsplit(url).scheme in SCHEMES else "redis"
    return (f"Redis at {where} refused the credentials ({answer}); put the password it expects in REDIS_URL: "
            f"{scheme}://:PASSWORD@{where}, or {scheme}://USER:PASSWORD@{where} for an ACL user")


UNAVAILABLE_STAT = "skillgraph/distributed/redis_unavailable"
REFUSED_STAT = "skillgraph/distributed/redis_refused"  # the password or the ACL refused at start
RETRY_INTERVAL = 0.25  # seconds between connection attempts while waiting at start

_AT_START: WeakKeyDictionary[Crawler, asyncio.Future[str | None]] = WeakKeyDictionary()


def redis_location(url: str) -> str:
    """``host:port/db`` of a Redis URL, without user or password (for logs)."""
    parts = urlsplit(url)
    if parts.scheme == "unix":
        return parts.path.rpartition("@")[2] or "?"  # an unescaped '/' in a password ends the netloc early
    try:
        port = parts.port or 6379
    except ValueError:  # not a port: more likely the piece of a password with an unescaped '/'
        return "?"
    db = parts.path.strip("/")
    return f"{parts.hostname or '?'}:{port}/{db if db.isdigit() else 0}"


async def wait_for_redis(url: str, timeout: float) -> str | None:
    """Ping Redis until it answers or ``timeout`` seconds have passed: None, or the last error.

    A refused password or ACL is not waited for: the answer is then a
    :class:`~skillgraph.distributed.connection.RedisRefused` at once (it will not heal by itself).
    """
    from redis.asyncio import Redis
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff
    from redis.exceptions import RedisError

    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(timeout, 0.0)
    while True:
        attempt = max(deadline - loop.time(), 0.5)  # timeout 0: one attempt
        client = Redis.from_url(url, socket_connect_timeout=attempt, socket_timeout=attempt,
                                retry=Retry(NoBackoff(), 0))
        try:
            await asyncio.wait_for(client.ping(), attempt)
            return None
        except (TimeoutError, RedisError, OSError) as exc:
            if refusal(exc):
                return RedisRefused(refusal_sentence(url, exc))
            error = str(exc) or type(exc).__name__
        finally:
            await client.aclose()
        if loop.time() + RETRY_INTERVAL >= deadline:
            return error
        await asyncio.sleep(RETRY_INTERVAL)


async def redis_at_start(crawler: Crawler) -> str | None:
    """Whether this crawl may use Redis: None when it answered at start, else why not.

    Asked once per crawler (the first caller waits, the others share the
    answer). On a failure it warns once, counts the stat, puts the crawl's
    Redis state out of use for the whole run (no per-page retries, no second
    warning) and records the fallback in ``sources.json``.
    """
    found = _AT_START.get(crawler)
    if found is None:
        found = _AT_START[crawler] = asyncio.ensure_future(_look(crawler))
    return await asyncio.shield(found)


def redis_unavailable_at_start(crawler: Crawler) -> bool:
    """True once :func:`redis_at_start` found Redis unreachable (for components set up later)."""
    found = _AT_START.get(crawler)
    return found is not None and found.done() and not found.cancelled() and found.result() is not None


def redis_refused(crawler: Crawler) -> str | None:
    """The one sentence to say when Redis refused this crawl's credentials or ACL at start, else None."""
    found = _AT_START.get(crawler)
    answer = found.result() if found is not None and found.done() and not found.cancelled() else None
    return answer if isinstance(answer, RedisRefused) else None


async def _look(crawler: Crawler) -> str | None:
    settings = crawler.settings
    url = settings.get("REDIS_URL")
    if not url:
        return "REDIS_URL is not set"
    timeout = settings.getfloat("SKILLGRAPH_DISTRIBUTED_CONNECT_TIMEOUT", 5.0)
    error = await wait_for_redis(url, timeout)
    if error is None:
        return None
    from skillgraph.build.state import RedisState, get_state
    from skillgraph.signals import build_warning

    state = get_state(crawler)
    if isinstance(state, RedisState):  # answers "unknown" for the whole run, without a warning of its own
        state.down_until = math.inf
        state.warned = True
    if isinstance(error, RedisRefused):  # not an outage: the crawl command closes the spider and exits 1
        if crawler.stats is not None:
            crawler.stats.set_value(REFUSED_STAT, 1)
        logger.error("%s", error)
        return error
    if crawler.stats is not None:
        crawler.stats.set_value(UNAVAILABLE_STAT, 1)
    spider = crawler.spider.name if crawler.spider is not None else "SPIDER"
    where = redis_location(url)
    logger.warning("Redis at %s unreachable for %g s (%s): this crawl runs on a local frontier and keeps its "
                   "documents on disk only; run `scrapy replay %s` when Redis is back", where, timeout, error, spider)
    crawler.signals.send_catch_log(
        build_warning, kind="redis-unavailable", url=None,
        message=f"Redis at {where} was unreachable at start: local frontier; documents not queued for the store "
                f"until `scrapy replay {spider}`")
    return error
