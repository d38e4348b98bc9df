"""Crawl throughput: ``scrapy crawl docs`` against plain Scrapy on the Python 3.11 docs.

The real Python documentation (Debian ``python3.11-doc``) served on loopback,
the same concurrency and no politeness delay on every side:

* **skillgraph**: the whole build (profile, extraction, gates, pipelines, graph);
* **fetch limit**: plain Scrapy fetching the exact URL list that build wrote and
  nothing else (bench/plain_fetch.py) — what the machine can fetch at all;
* **LinkExtractor crawl**: plain Scrapy fetching and following links
  (bench/plain_crawl.py), the older baseline.

Rounds alternate so machine noise hits every side; the figures are medians.
CPU ms per page (user + system of the whole process tree, pool workers
included) is steadier than wall time on a shared machine; peak RSS is the
sampled sum over the process tree (bench/measure.py).

    .venv/bin/python bench/crawl.py [--rounds 3] [--concurrency 16] [--json OUT]
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import tempfile
from pathlib import Path

from loopback import listen_overflows, serve_directory  # bench/loopback.py (scripts run with bench/ on sys.path)
from measure import CoresUsed, Measured, compile_package, cores_used, run

ROOT = Path(__file__).resolve().parent.parent
DOCS = Path("/usr/share/doc/python3.11/html")
BENCH = ROOT / "bench"


def plain(script: str, target: str, concurrency: int) -> tuple[int, Measured]:
    out = Path(tempfile.mkstemp(suffix=".json")[1])
    with out.open("w") as stdout:
        measured = run([sys.executable, str(BENCH / script), target, str(concurrency)], cwd="/", stdout=stdout)
    if measured.returncode:
        raise SystemExit(f"{script} failed (exit {measured.returncode})")
    data = json.loads(out.read_text().strip().splitlines()[-1])
    out.unlink()
    measured.wall = float(data["seconds"])  # the crawl itself, as for skillgraph: no interpreter start-up
    return int(data["pages"]), measured


def skillgraph(url: str, concurrency: int, tmp: Path, allow: str, extra: list[str]) -> tuple[int, Measured]:
    stats_file = tmp / "stats.json"
    measured = run([sys.executable, "-m", "scrapy", "crawl", "docs", "-a", f"url={url}", "-a", "graph=pydocs",
                    # no politeness on either side: the same concurrency, no delay, no AutoThrottle
                    "-s", "DOWNLOAD_DELAY=0", "-s", "AUTOTHROTTLE_ENABLED=False",
                    "-s", f"CONCURRENT_REQUESTS_PER_DOMAIN={concurrency}",
                    "-s", "SKILLGRAPH_MAX_PAGES=5000", "-s", f"SKILLGRAPH_GRAPHS_DIR={tmp / 'graphs'}",
                    "-s", f"SKILLGRAPH_ITEMS_DIR={tmp / 'items'}", "-s", f"SKILLGRAPH_STATS_FILE={stats_file}",
                    "-s", f"SKILLGRAPH_SSRF_ALLOWLIST={allow}", "-s", "SKILLGRAPH_RECENCY_HOURS=0",
                    "-s", "SKILLGRAPH_CRAWL_TIMEOUT=0", *extra, "-L", "WARNING"], cwd=ROOT)
    if measured.returncode:
        raise SystemExit(f"scrapy crawl docs failed (exit {measured.returncode})")
    stats = json.loads(stats_file.read_text())
    measured.wall = float(stats["elapsed_time_seconds"])
    return int(stats.get("skillgraph/graph/pages", 0)), measured


def crawl_cores(measured: Measured, stats_file: Path) -> CoresUsed | None:
    """The machine's cores during the crawl itself (the stats' start to finish time): who used them, how many idle."""
    stats = json.loads(stats_file.read_text())
    start, finish = (datetime.datetime.fromisoformat(stats[key]).timestamp() for key in ("start_time", "finish_time"))
    return cores_used(measured, start, finish)


def row(name: str, runs: list[tuple[int, Measured]]) -> dict[str, float]:
    pages = runs[-1][0]
    return {
        "pages": pages,
        "pages_per_s": round(statistics.median(p / m.wall for p, m in runs), 1),
        "cpu_ms_per_page": round(statistics.median(1000 * m.cpu / p for p, m in runs), 2),
        "main_process_cpu_ms_per_page": round(statistics.median(1000 * m.main_cpu / p for p, m in runs), 2),
        "peak_rss_mb": round(max(m.peak_rss_mb for _, m in runs), 1),
        "max_process_rss_mb": round(max(m.max_rss_mb for _, m in runs), 1),
        "name": name,  # type: ignore[dict-item]
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--no-link-crawl", action="store_true", help="skip the LinkExtractor row")
    parser.add_argument("-s", dest="settings", action="append", default=[],
                        help="extra NAME=VALUE for skillgraph (e.g. SKILLGRAPH_PAGE_WORKERS=0)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if not (DOCS / "index.html").exists():
        print(f"{DOCS} missing: apt-get install python3.11-doc", file=sys.stderr)
        return 2
    compile_package(ROOT)  # bytecode as an install has it, not compiled again by every process of every round
    server = serve_directory(DOCS)
    host, port = server.server_address[:2]
    url = f"http://{host}:{port}/index.html"
    extra = [arg for setting in args.settings for arg in ("-s", setting)]
    runs: dict[str, list[tuple[int, Measured]]] = {"skillgraph": [], "fetch": [], "linkextractor": []}
    runs_cores: list[CoresUsed] = []
    dropped: list[int] = []
    for n in range(args.rounds):
        with tempfile.TemporaryDirectory() as tmp:
            overflows = listen_overflows()
            ours = skillgraph(url, args.concurrency, Path(tmp), f"{host}:{port}", extra)
            cores = crawl_cores(ours[1], Path(tmp) / "stats.json")
            sources = json.loads((Path(tmp) / "graphs" / "pydocs" / "sources.json").read_text())
            url_list = Path(tmp) / "urls.txt"
            url_list.write_text("\n".join(page["url"] for page in sources["pages"]) + "\n")
            fetched = plain("plain_fetch.py", str(url_list), args.concurrency)
            overflows = listen_overflows() - overflows
        runs["skillgraph"].append(ours)
        runs["fetch"].append(fetched)
        line = (f"round {n + 1}: skillgraph {ours[0]} pages {ours[0] / ours[1].wall:.1f}/s "
                f"{1000 * ours[1].cpu / ours[0]:.1f} cpu-ms/page ({1000 * ours[1].main_cpu / ours[0]:.1f} in the crawl "
                f"process) {ours[1].peak_rss_mb:.0f} MB; "
                f"fetch {fetched[0]} pages {fetched[0] / fetched[1].wall:.1f}/s "
                f"{1000 * fetched[1].cpu / fetched[0]:.1f} cpu-ms/page")
        if overflows:  # machine-wide: another process's server may have dropped them, but they mean stalls
            line += f"; {overflows} connections dropped by full accept queues on the machine (1 s stalls)"
            dropped.append(overflows)
        if cores is not None:
            line += f"; during the build's crawl, {cores}"
            runs_cores.append(cores)
        if not args.no_link_crawl:
            crawled = plain("plain_crawl.py", url, args.concurrency)
            runs["linkextractor"].append(crawled)
            line += f"; LinkExtractor {crawled[0]} pages {crawled[0] / crawled[1].wall:.1f}/s"
        print(line, flush=True)
    server.shutdown()
    rows = {name: row(name, r) for name, r in runs.items() if r}
    ours, limit = rows["skillgraph"], rows["fetch"]
    result = {"rows": rows, "ratio_to_fetch_limit": round(ours["pages_per_s"] / limit["pages_per_s"], 3),
              "rounds": args.rounds, "concurrency": args.concurrency, "settings": args.settings}
    result["connections_dropped"] = sum(dropped)
    if runs_cores:  # the median round's use of the machine while the build crawled
        result["build_cores"] = {part: round(statistics.median(getattr(c, part) for c in runs_cores), 2)
                                 for part in ("tree", "own", "others", "idle")}
    if "linkextractor" in rows:
        result["ratio_to_linkextractor"] = round(ours["pages_per_s"] / rows["linkextractor"]["pages_per_s"], 3)
    print(json.dumps(result))
    print("| | pages | pages/s | CPU ms/page (tree) | CPU ms/page (crawl process) | peak PSS MB (tree) | max RSS MB "
          "(one process) |\n|---|---|---|---|---|---|---|")
    for r in rows.values():
        print(f"| {r['name']} | {r['pages']} | {r['pages_per_s']} | {r['cpu_ms_per_page']} | "
              f"{r['main_process_cpu_ms_per_page']} | {r['peak_rss_mb']} | {r['max_process_rss_mb']} |")
    print(f"skillgraph / fetch limit = {result['ratio_to_fetch_limit']:.2f}x")
    if runs_cores:
        median = result["build_cores"]
        print(f"while the build crawled (median of rounds): {median['tree']} cores the build, {median['own']} this "
              f"process (loopback server, sampler), {median['others']} other processes, {median['idle']} idle")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    if ours["pages"] < 0.95 * limit["pages"] or limit["pages"] < 500:
        print("the build or the fetch of its URL list came up short", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
