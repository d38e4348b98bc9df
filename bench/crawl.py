"""Crawl throughput: ``scrapy crawl docs`` against plain Scrapy on the Python 3.11 docs.

Both crawl the real Python documentation (Debian ``python3.11-doc``) served on
loopback, with the same concurrency and no politeness delay; plain Scrapy only
fetches and follows links (bench/plain_crawl.py), skillgraph runs the whole
build (profile, extraction, pipelines, graph). Rounds alternate between the two
so machine noise hits both; the ratio of median rates is the figure.

    .venv/bin/python bench/crawl.py [--rounds 3] [--concurrency 16] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from loopback import serve_directory  # bench/loopback.py (scripts run with bench/ on sys.path)

ROOT = Path(__file__).resolve().parent.parent
DOCS = Path("/usr/share/doc/python3.11/html")




def run_plain(url: str, concurrency: int) -> tuple[int, float]:
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "plain_crawl.py"), url, str(concurrency)],
                         cwd="/", capture_output=True, text=True, check=True)
    data = json.loads(out.stdout.strip().splitlines()[-1])
    return int(data["pages"]), float(data["seconds"])


def run_skillgraph(url: str, concurrency: int, tmp: Path, allow: str) -> tuple[int, float]:
    stats_file = tmp / "stats.json"
    subprocess.run([sys.executable, "-m", "scrapy", "crawl", "docs", "-a", f"url={url}", "-a", "graph=pydocs",
                    # no politeness on either side: the same concurrency, no delay, no AutoThrottle
                    "-s", "DOWNLOAD_DELAY=0", "-s", "AUTOTHROTTLE_ENABLED=False",
                    "-s", f"CONCURRENT_REQUESTS_PER_DOMAIN={concurrency}",
                    "-s", "SKILLGRAPH_MAX_PAGES=5000", "-s", f"SKILLGRAPH_GRAPHS_DIR={tmp / 'graphs'}",
                    "-s", f"SKILLGRAPH_ITEMS_DIR={tmp / 'items'}", "-s", f"SKILLGRAPH_STATS_FILE={stats_file}",
                    "-s", f"SKILLGRAPH_SSRF_ALLOWLIST={allow}", "-s", "SKILLGRAPH_RECENCY_HOURS=0",
                    "-s", "SKILLGRAPH_CRAWL_TIMEOUT=0",
                    "-L", "WARNING"], cwd=ROOT, check=True)
    stats = json.loads(stats_file.read_text())
    return int(stats.get("skillgraph/graph/pages", 0)), float(stats["elapsed_time_seconds"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if not (DOCS / "index.html").exists():
        print(f"{DOCS} missing: apt-get install python3.11-doc", file=sys.stderr)
        return 2
    server = serve_directory(DOCS)
    host, port = server.server_address[:2]
    url = f"http://{host}:{port}/index.html"
    plain_rates, ours_rates, pages = [], [], {}
    for n in range(args.rounds):
        p_pages, p_secs = run_plain(url, args.concurrency)
        with tempfile.TemporaryDirectory() as tmp:
            s_pages, s_secs = run_skillgraph(url, args.concurrency, Path(tmp), f"{host}:{port}")
        plain_rates.append(p_pages / p_secs)
        ours_rates.append(s_pages / s_secs)
        pages = {"plain": p_pages, "skillgraph": s_pages}
        print(f"round {n + 1}: plain {p_pages} pages in {p_secs:.1f}s ({p_pages / p_secs:.1f}/s); "
              f"skillgraph {s_pages} pages in {s_secs:.1f}s ({s_pages / s_secs:.1f}/s)", flush=True)
    server.shutdown()
    plain, ours = statistics.median(plain_rates), statistics.median(ours_rates)
    result = {"pages": pages, "plain_pages_per_s": round(plain, 2), "skillgraph_pages_per_s": round(ours, 2),
              "ratio": round(ours / plain, 3), "rounds": args.rounds, "concurrency": args.concurrency}
    print(json.dumps(result))
    print(f"skillgraph / plain Scrapy = {ours / plain:.2f}x  ({ours:.1f} vs {plain:.1f} pages/s)")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    if pages["skillgraph"] < 0.95 * pages["plain"]:
        print("skillgraph built fewer pages than plain Scrapy fetched", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
