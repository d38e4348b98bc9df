"""Consistent polite defaults (issue 14, DESIGN.md "Settings"): the bounds a default crawl can reach.

The defaults must agree with each other: a crawl with nothing but the SSRF
allowlist set, against a host that answers in 100 ms, reaches
``SKILLGRAPH_MAX_PAGES`` (or the end of the site) inside
``SKILLGRAPH_CRAWL_TIMEOUT``; and when the timeout does stop a crawl, it closes
within seconds, with its stats. The real Python 3.11 docs (Debian
``python3.11-doc``) are served on loopback, every answer 100 ms late:

1. ``library/`` (317 pages): the whole scope, untruncated; figure: elapsed / timeout.
2. the site root (500+ pages in scope): truncated by ``max_pages``, not by the
   timeout; figure: elapsed / timeout.
3. the site root with ``SKILLGRAPH_CRAWL_TIMEOUT=30``: seconds from the timeout
   to the process's exit, and the stats written.

Each run is ``scrapy crawl docs -a url=URL -L WARNING`` as a user types it (plus
where to write, so nothing lands in the project); its stdout must carry the
summary. Exit status 1 when a figure misses its target.

    .venv/bin/python bench/defaults.py [--latency 0.1] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from loopback import serve_directory  # bench/loopback.py (scripts run with bench/ on sys.path)

ROOT = Path(__file__).resolve().parent.parent
DOCS = Path("/usr/share/doc/python3.11/html")
sys.path.insert(0, str(ROOT))

from skillgraph.addon import DEFAULTS  # noqa: E402

TIMEOUT = float(DEFAULTS["SKILLGRAPH_CRAWL_TIMEOUT"])  # type: ignore[arg-type]
MAX_PAGES = int(DEFAULTS["SKILLGRAPH_MAX_PAGES"])  # type: ignore[call-overload]
LIBRARY_PAGES = 317  # html files of library/ that are documentation pages (BENCHMARKS.md)
CLOSE_TIMEOUT = 30
CLOSE_WITHIN = 5.0  # seconds from the timeout to the exit: "within a few seconds"


def crawl(url: str, allow: str, tmp: Path, *extra: str) -> dict[str, Any]:
    """One default crawl; its wall time, exit code, summary (stdout), sources.json and stats."""
    stats_file = tmp / "stats.json"
    args = [sys.executable, "-m", "scrapy", "crawl", "docs", "-a", f"url={url}", "-a", "graph=bench",
            "-s", f"SKILLGRAPH_SSRF_ALLOWLIST={allow}", "-s", f"SKILLGRAPH_GRAPHS_DIR={tmp / 'graphs'}",
            "-s", f"SKILLGRAPH_ITEMS_DIR={tmp / 'items'}", "-s", f"SKILLGRAPH_STATE_PATH={tmp / 'state.sqlite3'}",
            "-s", f"SKILLGRAPH_STATS_FILE={stats_file}", *extra, "-L", "WARNING"]
    started = time.monotonic()
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT * 3)
    wall = time.monotonic() - started
    sources_path = tmp / "graphs" / "bench" / "sources.json"
    return {"code": proc.returncode, "wall": wall, "stdout": proc.stdout, "stderr": proc.stderr,
            "sources": json.loads(sources_path.read_text()) if sources_path.exists() else {},
            "stats": json.loads(stats_file.read_text()) if stats_file.exists() else {}}


def report(name: str, run: dict[str, Any]) -> dict[str, Any]:
    sources, stats = run["sources"], run["stats"]
    truncated = sources.get("truncated")
    row = {"run": name, "exit": run["code"], "pages": len(sources.get("pages", [])),
           "truncated": truncated and truncated["reason"], "elapsed_s": round(stats.get("elapsed_time_seconds", 0), 1),
           "wall_s": round(run["wall"], 1), "finish_reason": stats.get("finish_reason"),
           "summary_on_stdout": run["stdout"].startswith("graph bench: committed to ")}
    print(f"{name}: exit {row['exit']}, {row['pages']} pages, truncated {row['truncated']}, "
          f"{row['elapsed_s']} s crawl ({row['wall_s']} s wall), summary on stdout: {row['summary_on_stdout']}",
          flush=True)
    if not row["summary_on_stdout"]:
        print(run["stdout"][-500:] + run["stderr"][-2000:], file=sys.stderr)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", type=float, default=0.1, help="seconds each answer is late (default 0.1)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if not (DOCS / "index.html").exists():
        print(f"{DOCS} missing: apt-get install python3.11-doc", file=sys.stderr)
        return 2
    server = serve_directory(DOCS, latency=args.latency)
    host, port = server.server_address[:2]
    origin, allow = f"http://{host}:{port}", f"{host}:{port}"
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        library = report("library/", crawl(f"{origin}/library/", allow, Path(tmp, "library")))
        root = report("root", crawl(f"{origin}/index.html", allow, Path(tmp, "root")))
        closing = report(f"root, timeout {CLOSE_TIMEOUT}", crawl(f"{origin}/index.html", allow, Path(tmp, "close"),
                                                                 "-s", f"SKILLGRAPH_CRAWL_TIMEOUT={CLOSE_TIMEOUT}"))
        rows = [library, root, closing]
    server.shutdown()
    close_lag = round(closing["elapsed_s"] - CLOSE_TIMEOUT, 2)
    result = {"latency_s": args.latency, "timeout_s": TIMEOUT, "max_pages": MAX_PAGES, "runs": rows,
              "library_time_of_timeout": round(library["elapsed_s"] / TIMEOUT, 3),
              "root_time_of_timeout": round(root["elapsed_s"] / TIMEOUT, 3),
              "close_after_timeout_s": close_lag}
    print(json.dumps(result))
    print(f"library/ built in {result['library_time_of_timeout']:.2f}x the default timeout; the root reached "
          f"{root['pages']}/{MAX_PAGES} pages in {result['root_time_of_timeout']:.2f}x; a timed-out crawl closed "
          f"{close_lag:.1f} s after its bound")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    failures = []
    if library["pages"] < LIBRARY_PAGES or library["truncated"] or library["exit"] != 0:
        failures.append(f"library/: {library['pages']} pages, truncated {library['truncated']}")
    if root["truncated"] != "max_pages" or root["pages"] != MAX_PAGES:
        failures.append(f"root: {root['pages']} pages, truncated {root['truncated']} (expected max_pages)")
    if closing["truncated"] != "crawl_timeout" or closing["finish_reason"] != "crawl_timeout":
        failures.append(f"timeout run: truncated {closing['truncated']}, stats {closing['finish_reason'] or 'missing'}")
    if close_lag > CLOSE_WITHIN or closing["wall_s"] > CLOSE_TIMEOUT + CLOSE_WITHIN + 10:
        failures.append(f"timeout run closed {close_lag} s after its bound ({closing['wall_s']} s wall)")
    if not all(row["summary_on_stdout"] for row in rows):
        failures.append("a summary is missing from stdout")
    for failure in failures:
        print(f"FAIL {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
