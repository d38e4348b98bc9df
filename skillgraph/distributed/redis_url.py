"""``REDIS_URL``: which values are accepted, how they are shown, and how a refusal is told.

Every component that reads ``REDIS_URL`` hands it to redis-py unchanged
(``Redis.from_url``, scrapy-redis's ``get_redis``): ``redis://``, ``rediss://``
(TLS, with redis-py's ``ssl_*`` query arguments such as ``ssl_ca_certs``) and
``unix://``, credentials included (``redis://:PASSWORD@host`` or an ACL user,
``redis://USER:PASSWORD@host``). This module adds nothing to that contract; it
only

* checks the shape once, at start (:func:`url_problem`, for
  ``skillgraph.settings_check``), with redis-py's own parser, so a value the
  check accepts is one redis-py accepts;
* keeps the password out of every message: logs name Redis by
  :func:`skillgraph.distributed.redis_location` (``host:port/db``), and where
  the whole value must be shown (an invalid setting) it is :func:`redacted`;
* tells a refused password from an outage (:func:`refusal`). redis-py raises
  ``AuthenticationError``, a ``ConnectionError`` subclass, so code that waits
  for Redis to come back would otherwise wait forever for a password that
  will not change; every command says :func:`refusal_sentence` instead and
  exits 1.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

SCHEMES = ("redis", "rediss", "unix")
ALLOWED = "a Redis URL: redis://[USER:PASSWORD@]HOST[:PORT][/DB], rediss://... for TLS, or unix://[:PASSWORD@]/PATH"
_QUERY_SECRET = re.compile(r"(?i)([?&](?:password|ssl_password)=)[^&#]*")


class RedisRefused(str):
    """The answer of :func:`skillgraph.distributed.wait_for_redis` when Redis refused us: the sentence to say.

    A ``str``, so callers that only log the error need not know; :func:`skillgraph.distributed.redis_refused`
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
    from skillgraph.distributed import redis_location

    where = redis_location(url)
    answer = str(exc).rstrip(".") or type(exc).__name__
    if refusal(exc) == "permission":
        return (f"Redis at {where} refused a command to the ACL user of REDIS_URL ({answer}); give that user "
                "the worker ACL of docs/distributed.md")
    scheme = urlsplit(url).scheme if urlsplit(url).scheme in SCHEMES else "redis"
    return (f"Redis at {where} refused the credentials ({answer}); put the password it expects in REDIS_URL: "
            f"{scheme}://:PASSWORD@{where}, or {scheme}://USER:PASSWORD@{where} for an ACL user")
