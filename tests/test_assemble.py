"""One graph out of a fleet: the shares merged, a two-worker crawl assembled, ``scrapy assemble`` after a kill.

Real crawls of the Python docs ``library/`` scope (317 pages) against a real redis-server; the graph a
fleet writes is compared with a local crawl of the same scope (one, shared by the module).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skillgraph.distributed.assemblykeys import AssemblyKeys
from skillgraph.distributed.fleetbuild import FleetBuild, merge
from skillgraph.urls import default_graph_name
from tests.conftest import PYTHON_DOCS, ROOT, TEST_SETTINGS
from tests.redis_server import RedisServer, redis_server  # noqa: F401 - fixture
from tests.servers import Rule, SiteServer
from tests.test_distributed import log_of, start_worker, stats_of, wait_all, wait_until

SCOPE = "library/"
#: The workers' settings that shape pages (start_worker's), for the local crawl too.
SHAPING = {"SKILLGRAPH_RENDER_ENABLED": False}
ASSEMBLY = "skillgraph/assembly/"


# merging, without Redis ------------------------------------------------------------------------------------------


def page(url: str, sha: str, markdown: str = "text") -> dict[str, Any]:
    return {"url": url, "sha256": sha, "fetched_at": "2026-12-01T00:00:00Z", "tier": "html", "quality": 0.9,
            "title": "", "markdown": markdown}


def test_merge_gives_the_answers_of_one_build() -> None:
    h = "http://127.0.0.1:1/docs/"
    fleet = FleetBuild(
        pages=[page(h, "a", f"[b]({h}b.html) [c](c.html)"), page(h + "c.html", "c"), page(h + "b.html", "b"),
               page(h + "index.html", "a")],  # the same content as the start page, fetched by another worker
        skipped=[{"url": h + "b.html", "reason": "duplicate", "status": None, "detail": "dupefilter"},
                 {"url": h + "gone.html", "reason": "http", "status": 404},
                 {"url": h + "alias.html", "reason": "duplicate", "status": None, "detail": "dupefilter",
                  "alias": h + "c.html"}],
        outside=3,
        warnings=[{"kind": "partial", "url": None, "message": "w1"}, {"kind": "blocked", "url": h, "message": "m"},
                  {"kind": "blocked", "url": h, "message": "m"}, {"kind": "partial", "url": None, "message": "w2"}],
        shares=[{"profile": None, "seeds": []}, {"profile": {"scope": h, "source": h}, "seeds": [h],
                                                  "sitemap_out_of_scope": 2}])
    merged = merge(fleet)
    assert [p["url"] for p in merged.pages] == [h, h + "b.html", h + "c.html"], "site order: links of the start page"
    assert merged.aliases == {h + "index.html": h, h + "alias.html": h + "c.html"}
    account = merged.account
    assert account.skipped == [
        {"url": h + "index.html", "reason": "duplicate", "status": None, "detail": f"same content as {h}"},
        {"url": h + "gone.html", "reason": "http", "status": 404},
        {"url": h + "alias.html", "reason": "duplicate", "status": None, "detail": f"same content as {h}c.html"}]
    assert account.skipped_counts == {"duplicate": 2, "http": 1, "out-of-scope": 5}
    assert account.warnings == [{"kind": "blocked", "url": h, "message": "m"}], "once, without partial notes"
    assert account.scrape_profile == {"scope": h, "source": h} and account.truncated is None


def test_merge_truncated_when_a_worker_was() -> None:
    h = "http://127.0.0.1:1/"
    fleet = FleetBuild(pages=[page(h, "a")], shares=[
        {"truncated": {"limit": 5, "reason": "max_pages", "unreached": [h + "x", h]}},
        {"truncated": {"limit": 5, "reason": "max_pages", "unreached": [h + "y", h + "x"]}}])
    assert merge(fleet).account.truncated == {"limit": 5, "reason": "max_pages", "skipped": 2,
                                              "unreached": [h + "x", h + "y"]}


# real crawls ---------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def docs() -> Iterator[SiteServer]:
    """The Python docs, each response a little slow, so that both workers of a fleet get a share."""
    server = SiteServer(PYTHON_DOCS, default=Rule(delay=0.02))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def local_graph(docs: SiteServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A local crawl of the scope, with the workers' page-shaping settings."""
    tmp = tmp_path_factory.mktemp("local")
    url = docs.url + SCOPE
    settings = {**TEST_SETTINGS, **SHAPING, "SKILLGRAPH_GRAPHS_DIR": tmp / "graphs",
                "SKILLGRAPH_ITEMS_DIR": tmp / "items", "SKILLGRAPH_STATE_PATH": tmp / "state.sqlite3",
                "SKILLGRAPH_SSRF_ALLOWLIST": f"127.0.0.1:{docs.port}"}
    args = [sys.executable, "-m", "scrapy", "crawl", "docs", "-a", f"url={url}"]
    for key, value in settings.items():
        args += ["-s", f"{key}={value}"]
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=120)
    graph = tmp / "graphs" / default_graph_name(url)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(list(graph.glob("*.md"))) >= 300
    return graph


def timeless(sources: dict[str, Any]) -> dict[str, Any]:
    """``sources.json`` without times, its lists as sorted JSON lines (order is the fleet's or the crawl's)."""
    data = {k: v for k, v in sources.items() if k != "built_at"}
    data["scrape_profile"] = {k: v for k, v in sources["scrape_profile"].items() if k != "detected_at"}
    for key in ("pages", "skipped", "warnings"):
        entries = [{k: v for k, v in e.items() if k != "fetched_at"} for e in sources[key]]
        data[key] = sorted(json.dumps(e, sort_keys=True) for e in entries)
    return data


def assert_same_graph(graph: Path, local: Path) -> None:
    files = {p.name: p.read_bytes() for p in graph.glob("*.md")}
    expected = {p.name: p.read_bytes() for p in local.glob("*.md")}
    assert sorted(files) == sorted(expected)
    assert [name for name in files if files[name] != expected[name]] == [], "byte-identical markdown"
    sources, local_sources = (json.loads((g / "sources.json").read_text()) for g in (graph, local))
    assert timeless(sources) == timeless(local_sources)
    assert not any(w["kind"] == "partial" for w in sources["warnings"])
    llms = (graph / "llms.txt").read_text()
    assert all(f"]({p['file']})" in llms for p in sources["pages"]), "llms.txt lists every page"


def fleet(tmp: Path, url: str, redis: RedisServer, server: SiteServer) -> list[subprocess.Popen[str]]:
    return [start_worker(tmp, name, url, redis.url, server, **SHAPING) for name in ("w1", "w2")]


def test_a_two_worker_fleet_writes_the_graph_of_a_local_crawl(tmp_path: Path, docs: SiteServer, local_graph: Path,
                                                               redis_server: RedisServer) -> None:  # noqa: F811
    url = docs.url + SCOPE
    codes = wait_all(fleet(tmp_path, url, redis_server, docs))
    assert codes == [0, 0], log_of(tmp_path, "w1")[-3000:] + log_of(tmp_path, "w2")[-3000:]
    stats = {name: stats_of(tmp_path, name) for name in ("w1", "w2")}
    last, other = sorted(stats, key=lambda n: -stats[n].get("skillgraph/distributed/frontier_cleared", 0))
    assert all(s[ASSEMBLY + "handed_over"] >= 20 for s in stats.values()), "both workers did a share"
    pages = len(list(local_graph.glob("*.md")))
    assert (stats[last][ASSEMBLY + "committed"], stats[last][ASSEMBLY + "pages"]) == (1, pages)
    assert stats[other][ASSEMBLY + "left_to_last"] == 1 and ASSEMBLY + "committed" not in stats[other]
    name = default_graph_name(url)
    assert not (tmp_path / other / "graphs" / name).exists(), "no partial graph of its own"
    assert_same_graph(tmp_path / last / "graphs" / name, local_graph)
    assert not redis_server.client().keys("*:build:*"), "the build keys are deleted once assembled"


def assemble(graph: str, redis_url: str, graphs: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "scrapy", "assemble", graph, "-s", f"REDIS_URL={redis_url}",
                           "-s", f"SKILLGRAPH_GRAPHS_DIR={graphs}"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_scrapy_assemble_after_the_last_worker_was_killed(tmp_path: Path, docs: SiteServer, local_graph: Path,
                                                          redis_server: RedisServer) -> None:  # noqa: F811
    url = docs.url + SCOPE
    name = default_graph_name(url)
    keys = AssemblyKeys.for_frontier(f"docs:{name}")
    client = redis_server.client()
    client.set(keys.lock, "stand-in", px=120_000)  # an assembler the last worker out waits for: killed there
    procs = fleet(tmp_path, url, redis_server, docs)
    waiting = "waits for stand-in"
    wait_until(lambda: any(waiting in log_of(tmp_path, n) for n in ("w1", "w2")) or any(p.poll() for p in procs),
               [], "the last worker out at the assembly lock", timeout=120)
    last = next(i for i, n in enumerate(("w1", "w2")) if waiting in log_of(tmp_path, n))
    procs[last].send_signal(signal.SIGKILL)
    assert wait_all([procs[1 - last]]) == [0] and procs[last].wait(timeout=10) == -signal.SIGKILL
    assert not list(tmp_path.glob("w*/graphs/*/sources.json")), "nobody assembled"
    pages = len(list(local_graph.glob("*.md")))
    assert client.hlen(keys.pages) >= pages and client.ttl(keys.pages) > 0, "the build waits in Redis, with a TTL"
    client.delete(keys.lock)

    graphs = tmp_path / "assembled"
    done = assemble(name, redis_server.url, graphs)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == [f"assembled graph {name}: {pages} pages in {graphs / name}"]
    assert_same_graph(graphs / name, local_graph)
    assert not client.keys("*:build:*")

    again = assemble(name, redis_server.url, graphs)
    assert again.returncode == 1 and again.stdout == ""
    assert again.stderr.startswith("scrapy assemble: nothing to assemble") and again.stderr.count("\n") == 1
    redis_server.stop()
    down = assemble(name, redis_server.url, graphs)
    assert down.returncode == 1 and "unreachable" in down.stderr and down.stderr.count("\n") == 1, down.stderr
    assert (graphs / name / "sources.json").exists(), "the assembled graph stays"
