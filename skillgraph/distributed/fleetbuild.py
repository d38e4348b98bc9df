"""FleetBuild: what the workers of one distributed build handed over, read back and merged.

The workers' shares (:mod:`skillgraph.distributed.share`) overlap where a
local build would have one answer: every worker's dupefilter duplicates name
links another worker fetched, two workers may fetch the same content under two
URLs (``/docs/`` and ``/docs/index.html``), and each says what it saw of the
profile and the bounds. :func:`merge` gives the one answer a local crawl of the
site gives, as a pure function of the shares, so it can be checked apart from
Redis and disk:

* pages in site order: the leader's seeds (start page, index or sitemap order),
  then breadth first along each page's links, as one crawler learns them (the
  shared frontier hands requests out in its own order, so fetch order is not
  site order); the same markdown under a second URL is that page's alias and a
  ``duplicate`` skip, as :meth:`Build.admit` does (llms-full sections are
  exempt, and keep the corpus's order);
* a URL that is a page is not skipped; otherwise the best-ranked skip stands;
* warnings once each, without the workers' ``partial`` notes (the graph is whole);
* truncated when a worker was, with the URLs nobody reached.
"""

from __future__ import annotations

import json
import re
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from skillgraph.graph.sources import Account
from skillgraph.urls import page_key

if TYPE_CHECKING:
    from redis import Redis

    from skillgraph.distributed.assemblykeys import AssemblyKeys

#: Warning kinds about one worker's share, not about the graph.
WORKER_WARNINGS = frozenset({"partial"})
PAGE_FIELDS = ("url", "file", "sha256", "fetched_at", "tier", "quality")
_LINK = re.compile(r"\]\(([^()\s]+)\)")  # a markdown link's destination


@dataclass
class FleetBuild:
    """The raw shares of one build, as stored."""

    pages: list[dict[str, Any]] = field(default_factory=list)  # records, in the fleet's order
    skipped: list[dict[str, Any]] = field(default_factory=list)  # entries, in the fleet's order
    outside: int = 0
    warnings: list[dict[str, Any]] = field(default_factory=list)
    shares: list[dict[str, Any]] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.pages or self.shares)

    @classmethod
    def read(cls, client: Redis, keys: AssemblyKeys) -> FleetBuild:
        """Read every key of the build in one transaction (a consistent snapshot)."""
        pipe = client.pipeline(transaction=True)
        pipe.hgetall(keys.pages)
        pipe.hgetall(keys.skipped)
        pipe.scard(keys.outside)
        pipe.lrange(keys.warnings, 0, -1)
        pipe.hgetall(keys.shares)
        pages, skipped, outside, warnings, shares = pipe.execute()
        return cls(ranked(pages), ranked(skipped), int(outside), [json.loads(w) for w in warnings],
                   [json.loads(v) for _, v in sorted(shares.items())])


def ranked(raw: dict[bytes, bytes]) -> list[dict[str, Any]]:
    """Hash values ``"<rank> <seq> <json>"`` as dicts, in ``seq`` order."""
    entries = []
    for value in raw.values():
        _, seq, data = value.decode("utf-8").split(" ", 2)
        entries.append((int(seq), json.loads(data)))
    return [entry for _, entry in sorted(entries, key=lambda pair: pair[0])]


@dataclass
class Merged:
    """One graph's worth: page records (markdown and title included), aliases, and the account."""

    pages: list[dict[str, Any]]
    aliases: dict[str, str]
    account: Account
    duplicates: int = 0  # pages dropped as the same content under another URL


def is_corpus(record: dict[str, Any]) -> bool:
    return record.get("tier") == "corpus" or "#" in str(record.get("url"))


def merge(fleet: FleetBuild) -> Merged:
    pages: list[dict[str, Any]] = []
    by_hash: dict[str, str] = {}
    aliases: dict[str, str] = {}
    skips: dict[str, dict[str, Any]] = {}
    for record in fleet.pages:  # the fleet's admission order: the first URL with some content keeps it
        url, sha = str(record["url"]), str(record["sha256"])
        if not is_corpus(record) and sha in by_hash:
            aliases[url] = by_hash[sha]
            detail = f"same content as {by_hash[sha]}"
            skips[url] = {"url": url, "reason": "duplicate", "status": None, "detail": detail}
            continue
        by_hash.setdefault(sha, url)
        pages.append(record)
    written = {str(p["url"]) for p in pages} | {page_key(str(p["url"])) for p in pages if not is_corpus(p)}
    for entry in fleet.skipped:
        url = str(entry["url"])
        alias = entry.pop("alias", None)
        if url in written or url in skips:
            continue
        if alias:  # a worker's ledger may hold an earlier dupefilter note for it: say it as a local build does
            aliases[url] = str(alias)
            entry["detail"] = f"same content as {alias}"
        skips[url] = entry
    skipped = list(skips.values())
    counts: dict[str, int] = {}
    for entry in skipped:
        counts[str(entry["reason"])] = counts.get(str(entry["reason"]), 0) + 1
    sitemap = max((int(s.get("sitemap_out_of_scope") or 0) for s in fleet.shares), default=0)
    if sitemap or fleet.outside:
        counts["out-of-scope"] = sitemap + fleet.outside
    settled = written | set(skips)
    account = Account(profile(fleet.shares), skipped, counts, truncation(fleet.shares, settled),
                      warnings(fleet.warnings))
    seeds = [url for share in fleet.shares for url in share.get("seeds") or []]
    return Merged(site_order(pages, seeds), aliases, account, duplicates=len(fleet.pages) - len(pages))


def site_order(pages: list[dict[str, Any]], seeds: list[str]) -> list[dict[str, Any]]:
    """``pages`` as one crawler meets them: seeds in order, then breadth first along their links."""
    if all(is_corpus(p) for p in pages):
        return pages
    by_url = {str(p["url"]): p for p in pages}
    order: dict[str, None] = {}
    queue: deque[str] = deque(u for u in seeds if u in by_url)
    leftover = iter(by_url)
    while len(order) < len(by_url):
        if not queue:
            queue.append(next(u for u in leftover if u not in order))
        url = queue.popleft()
        if url in order:
            continue
        order[url] = None
        queue.extend(u for u in links_of(by_url[url]) if u in by_url and u not in order)
    return [by_url[url] for url in order]


def links_of(record: dict[str, Any]) -> list[str]:
    """The page URLs a page's markdown links to, in order (for ordering only: links in code count too)."""
    base = str(record["url"])
    return [page_key(urljoin(base, m.group(1))) for m in _LINK.finditer(str(record["markdown"]))
            if not m.group(1).startswith("#")]


def profile(shares: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The build's scrape profile: every worker holds the leader's (the first that has one)."""
    return next((s["profile"] for s in shares if s.get("profile")), None)


def truncation(shares: list[dict[str, Any]], settled: set[str]) -> dict[str, Any] | None:
    """``truncated`` of the fleet: the first worker's bound, and the URLs no worker settled."""
    cut = [s["truncated"] for s in shares if s.get("truncated")]
    if not cut:
        return None
    unreached: dict[str, None] = {}
    for truncated in cut:
        unreached.update((u, None) for u in truncated.get("unreached") or [] if u not in settled)
    urls = list(unreached)
    return {"limit": cut[0].get("limit"), "reason": cut[0].get("reason"), "skipped": len(urls), "unreached": urls}


def warnings(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each warning once, in order, without the workers' notes about their own share."""
    seen: set[str] = set()
    kept = []
    for entry in entries:
        key = json.dumps(entry, sort_keys=True)
        if entry.get("kind") in WORKER_WARNINGS or key in seen:
            continue
        seen.add(key)
        kept.append(entry)
    return kept


def page_entry(record: dict[str, Any], file_name: str) -> dict[str, Any]:
    """The record as a ``sources.json`` page, in the writer's field order."""
    return {name: (file_name if name == "file" else record.get(name)) for name in PAGE_FIELDS}
