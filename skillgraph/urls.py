"""URL helpers shared by the profiler, the spiders and the graph writer.

The *scope* of a URL is its directory as an absolute URL ending in ``/``
(DESIGN.md, "Precise definitions"): ``/docs`` and ``/docs/`` both give
``/docs/``, ``/docs/intro.html`` gives ``/docs/``. A bare ``/docs`` is read as
a directory because documentation roots are linked without the slash far more
often than extension-less leaf pages are given as start URLs.
"""

from __future__ import annotations

import posixpath
import re
from functools import lru_cache
from urllib.parse import urljoin, urlsplit, urlunsplit

from skillgraph.graph.names import ascii_host, graph_name_from

_DEFAULT_PORTS = {"http": 80, "https": 443}


def scope_of(url: str) -> str:
    """The directory of ``url`` as an absolute URL ending in ``/``."""
    parts = urlsplit(url)
    path = parts.path or "/"
    if not path.endswith("/"):
        last = path.rsplit("/", 1)[-1]
        path = path + "/" if "." not in last else path.rsplit("/", 1)[0] + "/"
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def parent_scopes(scope: str) -> list[str]:
    """``scope`` and each parent directory up to the root, nearest first."""
    parts = urlsplit(scope)
    segments = [s for s in parts.path.split("/") if s]
    scopes = []
    for depth in range(len(segments), -1, -1):
        path = "/" + "".join(s + "/" for s in segments[:depth])
        scopes.append(urlunsplit((parts.scheme, parts.netloc, path, "", "")))
    return scopes


def root_of(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/", "", ""))


def in_scope(url: str, scope: str) -> bool:
    """True when ``url`` is on the scope's origin and under its path."""
    u, s = urlsplit(url), urlsplit(scope)
    if (u.scheme, u.netloc.lower()) != (s.scheme, s.netloc.lower()):
        return False
    return (u.path or "/").startswith(s.path) or (u.path + "/") == s.path


def default_graph_name(url: str) -> str:
    """The host, plus ``_PORT`` when the port is not the scheme's default, plus ``_`` and the scope's path.

    ``https://docs.python.org/3/library/`` gives ``docs.python.org_3_library``: two
    scopes of one host are two graphs.

    Made to fit the graph name rule (:mod:`skillgraph.graph.names`): a host in
    another script is written in its IDNA form, a name over 100 characters
    keeps its head and a hash of the whole.
    """
    parts = urlsplit(url)
    name = ascii_host(parts.hostname or "site")
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is not None and port != _DEFAULT_PORTS.get(parts.scheme):
        name = f"{name}_{port}"
    slug = scope_slug(url)
    return graph_name_from(f"{name}_{slug}" if slug else name)


@lru_cache(maxsize=8192)
def _join(base: str, reference: str) -> str:
    return urljoin(base, reference)


@lru_cache(maxsize=1024)
def _directory(base: str) -> str | None:
    """``base`` cut after the last ``/`` of its path (None unless it is an http(s) URL with a host).

    A reference with a path of its own is joined with the base's scheme, host and
    directory only (RFC 3986 §5.2.2: the last segment, the query and the fragment
    of the base are dropped), so every page of a directory shares those joins.
    """
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return urlunsplit((parts.scheme, parts.netloc, parts.path[: parts.path.rfind("/") + 1], "", ""))


#: First characters of a reference that is a relative path (no scheme: no ``:`` either).
_PATH_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-~")


#: An absolute http(s) URL that ``urljoin`` gives back as it is, whatever the base: a host, then a path or
#: nothing, then a query or nothing (not an empty one); ASCII without whitespace, controls, brackets, ``;``
#: or ``#`` (what it would strip, take apart or put back otherwise). Same scheme as the base: taken apart
#: and put together again, unchanged; another: returned as given.
_PLAIN_ABSOLUTE = re.compile(r"https?://[A-Za-z0-9._~!$&'()*+,=@%:-]+(?:/[A-Za-z0-9._~!$&'()*+,=@%:/-]*)?"
                             r"(?:\?[A-Za-z0-9._~!$&'()*+,=@%:/?-]+)?").fullmatch


def join(base: str, href: str) -> str:
    """``urljoin(base, href)``, fast for the links of docs pages.

    A docs page names the same few pages hundreds of times under different
    anchors, and the pages of one directory share their relative links: the
    join is cached without the fragment, which is appended again, and a
    relative path is joined with the base's directory, not the page. Links
    to other sites are mostly plain absolute URLs, each named once: those
    are not joined (nor cached) at all (:data:`_PLAIN_ABSOLUTE`).
    """
    reference, hash_, fragment = href.partition("#")
    if not reference:
        return base.split("#", 1)[0] + hash_ + fragment if hash_ else base
    if reference[0] == "h" and _PLAIN_ABSOLUTE(reference):  # urljoin gives it back as it is: no cache to fill
        _directory(base)  # urljoin parses the base first: a base it refuses is refused here too
        return href
    directory = _directory(base) if reference[0] in _PATH_START and ":" not in reference else None
    joined = _join(directory if directory is not None else base, reference)
    return joined + hash_ + fragment if hash_ else joined


@lru_cache(maxsize=8192)
def link_place(url: str, scope: str, not_pages: frozenset[str]) -> str:
    """Where a fragment-free link goes: ``"outside"`` the scope, to a ``"page"`` under it, or to a ``"file"``.

    A file is a URL whose last path segment has an extension in ``not_pages``.
    Memoised: a docs site links the same pages from every page.
    """
    if not url.startswith(scope) and not in_scope(url, scope):
        return "outside"
    last = urlsplit(url).path.rsplit("/", 1)[-1]
    if "." in last and last.rsplit(".", 1)[1].lower() in not_pages:
        return "file"
    return "page"


def page_key(url: str) -> str:
    """The identity of a fetched page in the build's bookkeeping: the URL without its fragment.

    Deliberately not ``canonicalize_url``: this runs for every link of every
    page, and the dupefilter canonicalises the requests that matter.
    """
    return url.split("#", 1)[0]


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def file_stem_for(url: str, scope: str) -> str:
    """A readable, flat file stem for a page URL, relative to the scope.

    ``https://h/docs/library/json.html`` under ``https://h/docs/`` gives
    ``library-json``; the scope's index gives ``index``; a fragment (an
    llms-full section) gives the section's slug.
    """
    parts = urlsplit(url)
    if parts.fragment:
        return _UNSAFE.sub("-", parts.fragment).strip("-.").lower() or "section"
    path = parts.path
    scope_path = urlsplit(scope).path
    if in_scope(url, scope):
        path = path[len(scope_path) :] if path.startswith(scope_path) else ""
    path = path.strip("/")
    if not path:
        return "index"
    stem, ext = posixpath.splitext(path)
    if ext.lower() not in {".html", ".htm", ".md", ".txt", ".php", ".aspx", ".xhtml"}:
        stem = path
    if stem.endswith("/index") and len(stem) > len("/index"):
        stem = stem[: -len("/index")]
    if parts.query:
        stem += "-" + parts.query
    return re.sub(r"-{2,}", "-", _UNSAFE.sub("-", stem.replace("/", "-"))).strip("-.") or "index"


_PSL: object | None = None


def registrable_domain(url_or_host: str) -> str:
    """The registrable domain of a URL or host (``docs.x.com`` -> ``x.com``), ports ignored.

    From the public-suffix list shipped in the ``publicsuffixlist`` package (never
    fetched at run time). An IP address or a single-label host (``localhost``) is
    its own domain.
    """
    global _PSL
    host = (urlsplit(url_or_host).hostname if "//" in url_or_host else url_or_host.split(":")[0]) or ""
    host = host.lower().rstrip(".")
    if not host or "." not in host or _is_ip(host):
        return host
    if _PSL is None:
        from publicsuffixlist import PublicSuffixList

        _PSL = PublicSuffixList()
    return str(_PSL.privatesuffix(host) or host)  # type: ignore[attr-defined]


def _is_ip(host: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def same_site(url: str, site_url: str, allowed_domains: tuple[str, ...] = ()) -> bool:
    """True when ``url`` is on ``site_url``'s registrable domain or one of ``allowed_domains``."""
    domain = registrable_domain(url)
    if domain == registrable_domain(site_url):
        return True
    host = (urlsplit(url).hostname or "").lower()
    return any(host == d or host.endswith("." + d) or domain == d for d in allowed_domains)


def scope_slug(url: str) -> str:
    """The scope's path as a name part: ``/docs/3/library/`` -> ``docs_3_library`` (empty at the root)."""
    path = urlsplit(scope_of(url)).path
    return re.sub(r"_{2,}", "_", _UNSAFE.sub("_", path.strip("/").replace("/", "_"))).strip("_.")
