"""What a finished site amounts to, and the batch's table and ``batch-report.json``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from skillgraph.batch.plan import SiteResult
from skillgraph.files import write_json_atomic
from skillgraph.strategy.profiler import utc_now


def read_stats(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _builds(graphs_dir: Path, name: str, pid: int) -> list[Path]:
    """The staging builds of the crawl with this pid (the graph writer names them ``<time>-<pid>``)."""
    root = graphs_dir / ".builds" / name
    return sorted(root.glob(f"*-{pid}")) if root.is_dir() else []


def live_pages(graphs_dir: Path, name: str, pid: int) -> int:
    return sum(1 for build in _builds(graphs_dir, name, pid) for _ in build.glob("*.md"))


def settle(result: SiteResult, graphs_dir: Path, pid: int, killed: str | None) -> SiteResult:
    """Status, pages and reason from the stats file; a killed site keeps its previous graph."""
    stats = result.stats
    if killed is not None:
        result.status, result.reason = "killed", killed
        # Pages written before the kill (none of them replaces the previous graph).
        result.pages = max(int(stats.get("skillgraph/graph/pages", 0) or 0), live_pages(graphs_dir, result.name, pid))
        live = (graphs_dir / result.name).resolve()
        for build in _builds(graphs_dir, result.name, pid):  # never the live one: only a success swaps it in
            if build.resolve() != live:
                shutil.rmtree(build, ignore_errors=True)
        graphs_dir.mkdir(parents=True, exist_ok=True)
        write_json_atomic(graphs_dir / f"{result.name}.failed.json", {
            "name": result.name,
            "failed_at": utc_now(),
            "reason": killed,
            "finish_reason": "killed",
            "pages": result.pages,
            "kept_previous": (graphs_dir / result.name).exists(),
            "killed_by": "scrapy batch",
        })
        return result
    result.pages = int(stats.get("skillgraph/graph/pages", 0) or 0)
    finish = stats.get("finish_reason")
    if result.returncode == 0 and stats.get("skillgraph/graph/committed"):
        result.status = "ok"
        result.reason = None if finish == "finished" else f"truncated: {finish}"
    else:
        result.status = "failed"
        result.reason = str(stats.get("skillgraph/graph/failed") or
                            (f"exit code {result.returncode}" if result.returncode else f"finished with {finish!r}"))
    return result


COLUMNS = ("site", "strategy", "status", "pages", "elapsed", "reason")


def table(results: list[SiteResult]) -> str:
    rows = [COLUMNS] + [(r.name, r.strategy or "?", r.status, str(r.pages), f"{r.elapsed:.1f}s", r.reason or "")
                        for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS) - 1)]
    lines = ["  ".join([*(cell.ljust(w) if i != 3 else cell.rjust(w) for i, (cell, w) in
                          enumerate(zip(row[:-1], widths, strict=True))), row[-1]]).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths) + "  " + "-" * 6)
    return "\n".join(lines)


def write_report(path: Path, results: list[SiteResult], meta: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    counts = {s: sum(1 for r in results if r.status == s) for s in ("ok", "failed", "killed")}
    write_json_atomic(path, {**meta, "finished_at": utc_now(), "counts": counts,
                             "sites": [{"order": i + 1, **r.to_json()} for i, r in enumerate(results)]})
