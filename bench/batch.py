"""Batch parallelism: ``scrapy batch`` over N small mirror sites, ``--jobs 1`` against ``--jobs 4``.

The sites are the loopback mirrors of tests/fixtures/mirrors/ (each a real
``scrapy crawl`` subprocess building a real graph). Rounds alternate between the
two job counts so machine noise hits both; the figure is the ratio of median
wall times (jobs 1 / jobs 4), plus each run's per-site elapsed sum.

    .venv/bin/python bench/batch.py [--rounds 2] [--sites 8]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.test_spiders import serve_mirror  # noqa: E402  (the same mirrors the tests crawl)

SITES = ["pfsense_docs", "kernel_docs", "pandas_docs", "rust_book", "postgres_docs", "redis_docs",
         "freebsd_handbook", "fedora_docs", "k8s_docs", "langchain", "chakra_ui", "mariadb"]


def run_batch(names: list[str], urls: dict[str, str], jobs: int, tmp: Path) -> tuple[float, dict]:
    graphs = tmp / f"graphs-{jobs}-{time.monotonic_ns()}"
    allow = ",".join(u.removeprefix("http://").rstrip("/") for u in urls.values())
    args = [sys.executable, "-m", "scrapy", "batch", *names, "--jobs", str(jobs)]
    for name in names:
        args += ["--base-url", f"{name}={urls[name]}"]
    for setting in (f"SKILLGRAPH_GRAPHS_DIR={graphs}", f"SKILLGRAPH_ITEMS_DIR={tmp / 'items'}",
                    f"SKILLGRAPH_STATE_PATH={graphs}.state.sqlite3", f"SKILLGRAPH_SSRF_ALLOWLIST={allow}",
                    "DOWNLOAD_DELAY=0", "SKILLGRAPH_RENDER_ENABLED=False"):
        args += ["-s", setting]
    t0 = time.monotonic()
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=900)
    wall = time.monotonic() - t0
    report = json.loads((graphs / "batch-report.json").read_text())
    if proc.returncode != 0 or report["counts"]["ok"] != len(names):
        sys.exit(f"batch failed (jobs {jobs}):\n{proc.stdout}\n{proc.stderr[-2000:]}")
    return wall, report


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--sites", type=int, default=8)
    opts = parser.parse_args()
    names = SITES[: opts.sites]
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        servers = {name: serve_mirror(name, tmp / "sites") for name in names}
        urls = {name: server.url for name, server in servers.items()}
        walls: dict[int, list[float]] = {1: [], 4: []}
        pages = 0
        for _ in range(opts.rounds):
            for jobs in (1, 4):
                wall, report = run_batch(names, urls, jobs, tmp)
                walls[jobs].append(wall)
                pages = sum(s["pages"] for s in report["sites"])
                busy = sum(s["elapsed"] for s in report["sites"])
                print(f"jobs {jobs}: {wall:6.1f} s wall, {busy:6.1f} s of site time, {pages} pages")
        for server in servers.values():
            server.stop()
    one, four = statistics.median(walls[1]), statistics.median(walls[4])
    print(f"{len(names)} sites, {pages} pages; median wall: jobs 1 {one:.1f} s, jobs 4 {four:.1f} s; "
          f"speed-up jobs 4 / jobs 1 = {one / four:.2f}x")


if __name__ == "__main__":
    main()
