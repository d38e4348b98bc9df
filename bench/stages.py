"""Where a page's CPU goes: the stage table of ``scrapy crawl docs`` on the Python 3.11 docs.

The build of bench/crawl.py (the real Python docs on loopback, 16 per domain, no
delay, no AutoThrottle) with bench/stage_clock.py loaded as an extension: every
downloader and spider middleware, the callbacks, the tier ladder, the page
pool's both sides, each step of a page's evaluation in the workers, each item
pipeline and the commit are timed with their thread's CPU clock
(``time.thread_time_ns``). The process tree's CPU (bench/measure.py, from
``/proc``) is the reference: the rows must add up to it within 10%, and the
script exits 1 when they do not.

Rows measured as a remainder (a thread's or a process's total less its timed
stages, never an estimate): "engine" (the reactor thread's CPU outside every
timed stage: Scrapy's engine and downloader, Twisted's HTTP client, asyncio),
"worker: transfer and queue" (a worker's CPU outside :func:`evaluate`:
unpickling jobs, pickling results).

Plain Scrapy fetching the same URL list (bench/plain_fetch.py) runs in each
round right after the build, its process tree measured the same way, so
"engine" and the whole table can be read against what fetching alone costs.

    .venv/bin/python bench/stages.py [--rounds 1] [-s NAME=VALUE ...] [--json OUT]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from crawl import plain  # bench/crawl.py: plain Scrapy fetching a URL list, measured
from loopback import serve_directory  # bench/loopback.py (scripts run with bench/ on sys.path)
from measure import Measured, compile_package, run

ROOT = Path(__file__).resolve().parent.parent
DOCS = Path("/usr/share/doc/python3.11/html")
BENCH = ROOT / "bench"
TOLERANCE = 0.10  #: the rows must add up to the tree's CPU within this share


def crawl(url: str, tmp: Path, allow: str, extra: list[str]) -> tuple[Measured, dict]:
    clock_file = tmp / "stages.json"
    env = {**os.environ, "SKILLGRAPH_STAGE_CLOCK": str(clock_file),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(BENCH), str(ROOT), os.environ.get("PYTHONPATH")]))}
    measured = run([sys.executable, "-m", "scrapy", "crawl", "docs", "-a", f"url={url}", "-a", "graph=pydocs",
                    "-s", "DOWNLOAD_DELAY=0", "-s", "AUTOTHROTTLE_ENABLED=False",
                    "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=16", "-s", "SKILLGRAPH_MAX_PAGES=5000",
                    "-s", f"SKILLGRAPH_GRAPHS_DIR={tmp / 'graphs'}", "-s", f"SKILLGRAPH_ITEMS_DIR={tmp / 'items'}",
                    "-s", f"SKILLGRAPH_STATE_PATH={tmp / 'state.sqlite3'}",
                    "-s", f"SKILLGRAPH_SSRF_ALLOWLIST={allow}", "-s", "SKILLGRAPH_RECENCY_HOURS=0",
                    "-s", "SKILLGRAPH_CRAWL_TIMEOUT=0", "-s", 'EXTENSIONS={"stage_clock.StageClock": 0}',
                    *extra, "-L", "WARNING"], cwd=ROOT, env=env)
    if measured.returncode:
        raise SystemExit(f"scrapy crawl docs failed (exit {measured.returncode})")
    return measured, json.loads(clock_file.read_text())


def classify(measured: Measured) -> dict[str, float]:
    """CPU seconds of the tree by kind of process: crawl, forkserver, workers, resource tracker, other."""
    kinds: collections.Counter[str] = collections.Counter()
    root = min(measured.processes) if measured.processes else 0
    roots = [pid for pid, (parent, _, _) in measured.processes.items() if parent == 0]
    root = roots[0] if roots else root
    forkservers = {pid for pid, (_, command, _) in measured.processes.items()
                   if "forkserver import main" in command and measured.processes[pid][0] == root}
    for pid, (parent, command, cpu) in measured.processes.items():
        if pid == root:
            kinds["crawl"] += cpu
        elif pid in forkservers:
            kinds["forkserver"] += cpu
        elif parent in forkservers:
            kinds["workers"] += cpu
        elif "resource_tracker" in command:
            kinds["resource tracker"] += cpu
        else:
            kinds["other: " + command[:40]] += cpu
    return dict(kinds)


def rows(measured: Measured, clock: dict) -> list[tuple[str, str, float]]:
    """(place, stage, CPU seconds) for one run."""
    ns = 1e-9
    out: list[tuple[str, str, float]] = []
    kinds = classify(measured)
    stages: dict[str, int] = dict(clock["stages_ns"])
    inline = clock.get("inline_ns", 0)
    if inline:  # evaluated on the reactor thread before the pool was up: its own row, not the pool's crawl side
        stages["page pool (crawl side)"] = stages.get("page pool (crawl side)", 0) - inline
        stages["evaluate in the crawl process (pages before the pool is up)"] = inline
    by_component: collections.Counter[str] = collections.Counter()
    for stage, value in stages.items():
        if ":" in stage and stage.split(":", 1)[0] in ("downloader middleware", "spider middleware", "pipeline"):
            kind, rest = stage.split(":", 1)
            component = rest.split(".", 1)[0] if "." in rest and not rest.startswith("GraphWriterPipeline (") else rest
            by_component[f"{kind}: {component}"] += value
        elif stage.startswith("callback:"):
            by_component["spider callbacks (crawl side)"] += value
        else:
            by_component[stage] += value
    main_thread = clock["main_ns"] - clock["startup_ns"]
    out.append(("crawl", "start-up (imports, settings, components)", clock["startup_ns"] * ns))
    if clock.get("gc_ns"):  # inside the stages that allocated: shown apart, not added (the stages hold it)
        print(f"(of which Python's cyclic garbage collector on the reactor thread: {clock['gc_ns'] * ns:.2f} s)")
    out.append(("crawl", "engine: Scrapy's engine, downloader, HTTP client, asyncio (reactor remainder)",
                (main_thread - sum(stages.values())) * ns))
    for name, value in sorted(by_component.items(), key=lambda kv: -kv[1]):
        out.append(("crawl", name, value * ns))
    threads = clock["threads_ns"]
    for name, value in sorted(threads.items(), key=lambda kv: -kv[1]):
        if name == "MainThread":
            continue
        label = {"asyncio": "threads: page files and disk items written off the reactor",
                 "skillgraph-state": "threads: crawl state (SQLite)"}.get(name, f"thread: {name}")
        out.append(("crawl", label, value * ns))
    shutdown = kinds.get("crawl", 0.0) - clock["process_ns"] * ns
    out.append(("crawl", "after the engine stopped (pool shutdown, exit)", max(shutdown, 0.0)))
    worker_stages = clock["worker_ns"]
    for name, value in sorted(worker_stages.items(), key=lambda kv: -kv[1]):
        out.append(("workers", name, value * ns))
    processes = clock.get("worker_processes") or {}
    started = sum(first for first, _ in processes.values()) * ns
    working = sum(last - first for first, last in processes.values()) * ns
    evaluated = sum(worker_stages.values()) * ns
    if processes:
        commit = clock.get("commit_worker_ns", 0) * ns
        out.append(("workers", "commit: links rewritten in the page workers", commit))
        out.append(("workers", "worker: start-up (before its first page)", started))
        out.append(("workers", "worker: between pages (unpickling jobs, pickling results, queues)",
                    working - evaluated))
        out.append(("workers", "worker: after its last page (shutdown)",
                    kinds.get("workers", 0.0) - started - working - commit))
    else:
        out.append(("workers", "worker: outside evaluate (start-up, transfer, queues)",
                    kinds.get("workers", 0.0) - evaluated))
    out.append(("pool", "forkserver and resource tracker (pool start-up)",
                kinds.get("forkserver", 0.0) + kinds.get("resource tracker", 0.0)))
    for kind, value in kinds.items():
        if kind.startswith("other"):
            out.append(("other", kind, value))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("-s", dest="settings", action="append", default=[], help="extra NAME=VALUE for skillgraph")
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
    table: dict[tuple[str, str], list[float]] = collections.defaultdict(list)
    totals, pages_seen, sums, fetch_totals = [], [], [], []
    for n in range(args.rounds):
        with tempfile.TemporaryDirectory() as tmp:
            measured, clock = crawl(url, Path(tmp), f"{host}:{port}", extra)
            sources = json.loads((Path(tmp) / "graphs" / "pydocs" / "sources.json").read_text())
            url_list = Path(tmp) / "urls.txt"
            url_list.write_text("\n".join(page["url"] for page in sources["pages"]) + "\n")
            fetched_pages, fetched = plain("plain_fetch.py", str(url_list), 16)
        fetch_totals.append(1000 * fetched.cpu / fetched_pages)
        pages = int(clock["pages"])
        per_page = {(place, stage): 1000 * value / pages for place, stage, value in rows(measured, clock)}
        for key, value in per_page.items():
            table[key].append(value)
        total = 1000 * measured.cpu / pages
        totals.append(total)
        pages_seen.append(pages)
        sums.append(sum(per_page.values()))
        print(f"round {n + 1}: {pages} pages, tree {total:.2f} CPU ms/page, rows add up to {sums[-1]:.2f} "
              f"({sums[-1] / total:.1%}), {pages / measured.wall:.1f} pages/s wall (loaded machines vary); "
              f"plain Scrapy fetching the same {fetched_pages} URLs: {fetch_totals[-1]:.2f} CPU ms/page", flush=True)
    server.shutdown()
    median = {key: statistics.median(values + [0.0] * (args.rounds - len(values))) for key, values in table.items()}
    tree, added = statistics.median(totals), statistics.median(sums)
    print("\n| where | stage | CPU ms/page | share |\n|---|---|---|---|")
    for (place, stage), value in sorted(median.items(), key=lambda kv: (kv[0][0] != "crawl", -kv[1])):
        print(f"| {place} | {stage} | {value:.2f} | {value / tree:.1%} |")
    print(f"| | **rows** | **{added:.2f}** | {added / tree:.1%} |")
    print(f"| | **process tree (bench/measure.py)** | **{tree:.2f}** | 100% |")
    by_place: collections.Counter[str] = collections.Counter()
    for (place, _), value in median.items():
        by_place[place] += value
    print("\nby place: " + ", ".join(f"{place} {value:.2f}" for place, value in by_place.most_common()))
    print(f"plain Scrapy fetching the same URLs (bench/plain_fetch.py, same rounds): "
          f"{statistics.median(fetch_totals):.2f} CPU ms/page over its process tree")
    if args.json:
        args.json.write_text(json.dumps({"tree_cpu_ms_per_page": tree, "rows_cpu_ms_per_page": added,
                                         "plain_fetch_cpu_ms_per_page": statistics.median(fetch_totals),
                                         "pages": pages_seen, "settings": args.settings,
                                         "rows": [{"where": p, "stage": s, "cpu_ms_per_page": v}
                                                  for (p, s), v in median.items()]}, indent=2) + "\n")
    if abs(added - tree) > TOLERANCE * tree:
        print(f"the rows add up to {added:.2f} CPU ms/page, not within {TOLERANCE:.0%} of the tree's {tree:.2f}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
