"""``make demo``: build a skill graph offline from the docs site shipped in ``demo/site``.

Serves the site on a free loopback port, runs ``scrapy crawl docs`` against it
with the project's defaults (no services: local scheduler, disk items, SQLite),
and prints where the graph is and which strategy built it. Extra arguments go to
``scrapy crawl`` as they are, e.g. ``python demo/demo.py -s SKILLGRAPH_RENDER_BROWSER=/nonexistent``
(no browser: the render tier is switched off with one warning, the demo still builds).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "demo" / "site"
PORT = 8765


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


def serve(site: Path) -> ThreadingHTTPServer:
    """The demo site on PORT when it is free (the same URLs run after run: a rebuild, not a new site), else any."""
    handler = partial(QuietHandler, directory=str(site))
    try:
        return ThreadingHTTPServer(("127.0.0.1", PORT), handler)
    except OSError:
        return ThreadingHTTPServer(("127.0.0.1", 0), handler)


def main(extra: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="skillgraph-demo-") as tmp:
        site = Path(tmp) / "site"
        shutil.copytree(SITE, site)
        server = serve(site)
        host, port = server.server_address[:2]
        origin = f"http://{host}:{port}"
        template = site / "sitemap.xml.in"
        (site / "sitemap.xml").write_text(template.read_text().replace("{{ORIGIN}}", origin))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"{origin}/docs/"
        print(f"Serving demo/site on {origin} (loopback only); crawling {url}", flush=True)
        cmd = [sys.executable, "-m", "scrapy", "crawl", "docs", "-a", f"url={url}", "-a", "graph=demo",
               "-s", "DOWNLOAD_DELAY=0.1", "-s", f"SKILLGRAPH_SSRF_ALLOWLIST={host}:{port}", "-L", "WARNING",
               # another port than last time means other URLs: a new build of the demo, not a shrink
               "-s", "SKILLGRAPH_ALLOW_SHRINK=True", *extra]
        code = subprocess.call(cmd, cwd=ROOT)
        server.shutdown()
    graph = ROOT / "graphs" / "demo"
    sources_path = graph / "sources.json"
    if code != 0 or not sources_path.exists():
        print(f"demo failed (exit {code}); see graphs/demo.failed.json", file=sys.stderr)
        return 1
    sources = json.loads(sources_path.read_text())
    profile = sources["scrape_profile"]
    print(f"\nGraph: {graph.relative_to(ROOT)}/  ({len(sources['pages'])} pages)")
    print(f"Strategy: {profile['strategy']} (source {profile['source']})")
    for page in sources["pages"]:
        print(f"  {page['file']:<28} tier={page['tier']:<9} quality={page['quality']}  {page['url']}")
    print(f"Provenance: {sources_path.relative_to(ROOT)}")
    index = graph / "llms.txt"
    first = index if index.exists() else graph / sources["pages"][0]["file"] if sources["pages"] else graph
    print(f"Open: {first.relative_to(ROOT)}  (the whole graph: {graph})")
    return 0 if sources["pages"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
