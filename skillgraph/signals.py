"""skillgraph's own signals (sent through ``crawler.signals``).

Components report build events as signals rather than by calling each other,
so the graph writer stays the one place that assembles ``sources.json``.
"""

from __future__ import annotations

#: The site's strategy was chosen. Args: ``profile`` (SiteProfile).
profile_detected = object()

#: Something the build's reader must know (a blocked page, a best-effort page,
#: an unread sitemap...). Args: ``kind`` (str), ``url`` (str | None), ``message`` (str),
#: and optional ``label`` (str).
build_warning = object()

#: A bound stopped the build early. Args: ``reason`` ("max_pages" | "crawl_timeout"),
#: ``limit`` (int: pages or seconds).
build_truncated = object()

#: A page is known unchanged without a new body (HTTP 304, or skipped by recency
#: dedup): the graph writer carries the previous build's file over. Args: ``url`` (str).
page_not_modified = object()


#: The graph writer swapped the build in. Args: ``build`` (skillgraph.build.Build).
build_committed = object()

#: The build was not committed (the previous graph is kept). Args: ``build``.
build_failed = object()

#: Redis answered again after an outage, and the distributed scheduler rejoined the frontier
#: (:mod:`skillgraph.distributed.reconnect`): the dual write pushes what the outage left pending. No args.
redis_back = object()
