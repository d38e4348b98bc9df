"""What a build writes about itself: ``sources.json``, ``<name>.failed.json``, and the shrink guard.

Pure functions of the Build (:mod:`skillgraph.build`) and the pages written, so
the graph writer (:mod:`skillgraph.pipelines.graph`) keeps to writing and
committing. Field names are the public contract of DESIGN.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from skillgraph.strategy.profiler import utc_now

if TYPE_CHECKING:
    from skillgraph.build import Build


@dataclass
class Account:
    """What a build says about itself besides its pages: one crawl's Build, or a fleet's, assembled.

    ``sources.json`` and ``failed.json`` are written from this, so a graph
    assembled from a distributed build (:mod:`skillgraph.distributed.assembly`)
    says it in the same fields as a local one.
    """

    scrape_profile: dict[str, Any] | None
    skipped: list[dict[str, Any]]
    skipped_counts: dict[str, int]
    truncated: dict[str, Any] | None
    warnings: list[dict[str, Any]]

    @classmethod
    def of(cls, build: Build) -> Account:
        return cls(scrape_profile(build), [e.skipped_json() for e in build.skipped()], build.skipped_counts(),
                   build.truncation(), build.warnings)


def scrape_profile(build: Build) -> dict[str, Any] | None:
    if build.profile is None:
        return None
    data = build.profile.to_json()
    data.pop("url", None)
    return data


def changes(previous: dict[str, dict[str, Any]], pages: list[dict[str, Any]]) -> dict[str, int]:
    """new / changed / unchanged / removed pages against the live graph."""
    before = {url: page["sha256"] for url, page in previous.items()}
    current = {p["url"]: p["sha256"] for p in pages}
    new = sum(1 for u in current if u not in before)
    changed = sum(1 for u, h in current.items() if u in before and before[u] != h)
    return {"new": new, "changed": changed, "unchanged": len(current) - new - changed,
            "removed": sum(1 for u in before if u not in current)}


def sources_json(name: str, build: Build, pages: list[dict[str, Any]]) -> dict[str, Any]:
    return sources_document(name, Account.of(build), pages, build.previous.pages)


def sources_document(name: str, account: Account, pages: list[dict[str, Any]],
                     previous: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``sources.json`` of ``pages`` (as written), against the live graph's ``previous`` pages."""
    return {
        "name": name,
        "built_at": utc_now(),
        "scrape_profile": account.scrape_profile,
        "pages": pages,
        "skipped": account.skipped,
        "skipped_counts": account.skipped_counts,
        "truncated": account.truncated,
        "warnings": account.warnings,
        "changes": changes(previous, pages),
    }


def failure_json(name: str, build: Build, pages: list[dict[str, Any]], why: str, reason: str,
                 kept_previous: bool) -> dict[str, Any]:
    return failure_document(name, Account.of(build), pages, why, reason, kept_previous)


def failure_document(name: str, account: Account, pages: list[dict[str, Any]], why: str, reason: str,
                     kept_previous: bool) -> dict[str, Any]:
    return {
        "name": name,
        "failed_at": utc_now(),
        "reason": why,
        "finish_reason": reason,
        "pages": len(pages),
        "kept_previous": kept_previous,
        "scrape_profile": account.scrape_profile,
        "skipped": account.skipped,
        "skipped_counts": account.skipped_counts,
        "warnings": account.warnings,
    }


def llms_summary(profile: dict[str, Any] | None) -> str | None:
    """The ``> summary`` line of the graph's ``llms.txt`` (None: llms_index writes a page count)."""
    if not profile:
        return None
    return f"Documentation of {profile['scope']}, built by skillgraph from {profile['source']}"


def shrink_guard(previous: dict[str, dict[str, Any]], pages: list[dict[str, Any]], allow: bool) -> str | None:
    """Why this build must not replace the live graph (it would lose most of it, or all its real pages), or None."""
    if allow or not previous:
        return None
    current = {p["url"] for p in pages}
    removed = sum(1 for url in previous if url not in current)
    if removed * 2 > len(previous):
        return (f"the build would remove {removed} of the live graph's {len(previous)} pages "
                "(set SKILLGRAPH_ALLOW_SHRINK=True to commit it anyway)")
    real_before = any(p.get("tier") != "best-effort" for p in previous.values())
    if real_before and all(p.get("tier") == "best-effort" for p in pages):
        return ("the build has only best-effort pages and would replace a graph with real ones "
                "(set SKILLGRAPH_ALLOW_SHRINK=True to commit it anyway)")
    return None
