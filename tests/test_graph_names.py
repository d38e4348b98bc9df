"""Graph names and page file names are untrusted input (issue 25): nothing is written outside the graphs folder.

Four layers, each tested the way a user or an attacker reaches it:

* the rule itself (:mod:`skillgraph.graph.names`), over names nobody listed by hand;
* ``scrapy crawl`` / ``scrapy assemble`` / ``scrapy replay`` with hostile names: exit 2, one line, no
  traceback, and the folder around the graphs folder unchanged;
* unusable output settings (a file, a read-only or full disk, a folder where a file belongs) and a disk
  that fills up mid-build: one sentence naming the setting, a non-zero exit, the live graph kept;
* a hostile site whose links are made to break file names (``..``, ``%2e%2e``, ``%2f``, backslashes,
  NUL, overlong segments, names differing only by case): every file inside its graph folder, names
  unique, every URL the build learned of a page or a ``skipped`` entry.

The scrapyd case (a hostile ``graph`` over HTTP) is in ``tests/test_scrapyd.py``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import string
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

from skillgraph.graph.folder import GraphFolder
from skillgraph.graph.names import (
    GraphNameError,
    UnsafePathError,
    check_graph_name,
    graph_path,
    is_file_name,
    is_graph_name,
    unique_file_name,
)
from skillgraph.urls import default_graph_name, file_stem_for
from tests.conftest import PYTHON_DOCS, ROOT, TEST_SETTINGS
from tests.servers import LoopbackHTTPServer, SiteServer, free_port

HOSTILE_NAMES = ["../x", "a/b", "/abs", "..", ".", "a" * 300, "../../etc", "a/../../b", "..\\x", "x\\y", "x\x00y",
                 ".builds", ".hidden", "-rf", "x.failed.json", "batch-logs", "", " ", "ä", "x y", "x\ny", "%2e%2e",
                 "C:\\x", "~root", "$HOME"]
GOOD_NAMES = ["python_docs", "docs.python.org_3_library", "127.0.0.1_8000_library", "a", "A-b.c_d", "9" * 100]


# -- the rule ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_a_hostile_name_is_refused_with_one_sentence(name: str) -> None:
    assert not is_graph_name(name)
    with pytest.raises(GraphNameError) as raised:
        check_graph_name(name)
    message = str(raised.value)
    assert "\n" not in message and "is not allowed" in message and len(message) < 400


@pytest.mark.parametrize("name", GOOD_NAMES)
def test_a_plain_name_is_kept_as_it_is(name: str, tmp_path: Path) -> None:
    assert check_graph_name(name) == name
    assert graph_path(tmp_path, name).resolve().parent == tmp_path.resolve()


def test_any_accepted_name_is_one_segment_directly_in_the_graphs_folder(tmp_path: Path) -> None:
    """Names nobody listed: random strings over an alphabet of path syntax. What passes stays in the folder."""
    rng = random.Random(25)
    alphabet = string.ascii_letters + string.digits + "._-/\\:%~ \x00\n" + "äé日"
    accepted = 0
    for _ in range(20000):
        name = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))
        if not is_graph_name(name):
            continue
        accepted += 1
        path = graph_path(tmp_path, name)
        assert path.resolve().parent == tmp_path.resolve() and path.name == name, name
        assert not name.startswith(".") and "/" not in name and "\\" not in name, name
    assert accepted > 100  # the rule is not "refuse everything"


@pytest.mark.parametrize("url", [
    "https://docs.python.org/3/library/", "http://127.0.0.1:8000/library/", "http://bücher.example/docs/",
    "http://例え.jp/ドキュメント/", "http://h/" + "a" * 300 + "/", "http://h/%2e%2e/%2e%2e/etc/", "http://h/..%2f..%2f/",
    "http://h/x.json/", "http://[::1]:8080/docs/", "http://h/.builds/", "http://h/a\\b/c/", "http://h:99999/x/"])
def test_names_made_from_urls_fit_the_rule(url: str) -> None:
    name = default_graph_name(url)
    assert is_graph_name(name), (url, name)


def test_two_long_urls_give_two_names() -> None:
    first, second = (default_graph_name(f"http://h/{'a' * 200}{tail}/") for tail in ("x", "y"))
    assert first != second and len(first) <= 100 and len(second) <= 100


def test_page_file_names_are_one_unique_segment_whatever_the_url() -> None:
    scope = "http://h/docs/"
    hostile = ["../../etc/passwd", "%2e%2e/%2e%2e/x.html", "a%2fb%2f..%2fc.html", "back\\slash\\..\\x.html",
               "nul%00byte.html", "a" * 400 + ".html", "a" * 400 + "b.html", "Page.html", "page.html", "PAGE.html",
               ".hidden.html", "-dash.html", "llms.html", "ünï.html", "?q=../../x", "x.html#../../y", "", ".", ".."]
    taken: set[str] = set()
    names = [unique_file_name(file_stem_for(scope + link, scope), taken, frozenset({"llms.md"})) for link in hostile]
    assert all(is_file_name(name) and name.endswith(".md") and len(name.encode()) < 200 for name in names), names
    assert len({name.casefold() for name in names}) == len(names), names
    assert "llms.md" not in names


def test_the_folder_refuses_a_name_or_a_file_that_would_leave_it(tmp_path: Path) -> None:
    graphs = tmp_path / "graphs"
    for name in ("../x", "a/b", ".."):
        with pytest.raises(GraphNameError):
            GraphFolder(graphs, name)
    folder = GraphFolder(graphs, "site")
    for file_name in ("../escape.md", "/abs.md", "a/b.md", "..", ".hidden.md"):
        with pytest.raises(UnsafePathError):
            folder.write_now(file_name, "# no")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["graphs"]


def test_a_builds_folder_that_points_outside_is_refused(tmp_path: Path) -> None:
    graphs, elsewhere = tmp_path / "graphs", tmp_path / "elsewhere"
    graphs.mkdir()
    elsewhere.mkdir()
    (graphs / ".builds").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(UnsafePathError):
        GraphFolder(graphs, "site")


# -- commands ---------------------------------------------------------------------------------------------------------

def snapshot(folder: Path) -> list[str]:
    """Every path under ``folder`` (what a command may have created), relative."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def scrapy(args: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "scrapy", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def assert_one_line(proc: subprocess.CompletedProcess[str], code: int, says: str, longest: int = 400) -> None:
    shown = f"exit {proc.returncode}\nstdout: {proc.stdout[-1000:]}\nstderr: {proc.stderr[-3000:]}"
    assert proc.returncode == code, shown
    assert "Traceback" not in proc.stderr, shown
    last = proc.stderr.rstrip("\n").splitlines()[-1]
    assert says in last and len(last) < longest, shown


CRAWL_NAMES = ["../x", "a/b", "/abs", "..", "a" * 300, "../../etc", "./.builds", "x.failed.json", "-rf", "x\\..\\y"]


@pytest.mark.parametrize("name", CRAWL_NAMES)
def test_crawl_refuses_a_hostile_graph_name_and_writes_nothing(name: str, tmp_path: Path) -> None:
    graphs = tmp_path / "bad" / "g"
    before = snapshot(tmp_path)
    proc = scrapy(["crawl", "docs", "-a", f"url=http://127.0.0.1:{free_port()}/docs/", "-a", f"graph={name}",
                   "-s", f"SKILLGRAPH_GRAPHS_DIR={graphs}", "-s", f"SKILLGRAPH_ITEMS_DIR={tmp_path / 'items'}",
                   "-s", f"SKILLGRAPH_STATE_PATH={tmp_path / 'state.sqlite3'}"])
    assert_one_line(proc, 2, "is not allowed")
    assert len(proc.stderr.splitlines()) <= 4, proc.stderr  # the usage line and the sentence: no crawl started
    assert snapshot(tmp_path) == before


def test_assemble_and_replay_refuse_hostile_names(tmp_path: Path) -> None:
    before = snapshot(tmp_path)
    where = ["-s", f"SKILLGRAPH_GRAPHS_DIR={tmp_path / 'g'}", "-s", f"SKILLGRAPH_ITEMS_DIR={tmp_path / 'items'}",
             "-s", f"REDIS_URL=redis://127.0.0.1:{free_port()}/0"]
    assert_one_line(scrapy(["assemble", "../../etc", *where]), 2, "is not allowed")
    assert_one_line(scrapy(["replay", "../items", *where]), 2, "is not allowed")
    assert snapshot(tmp_path) == before


@contextlib.contextmanager
def tmpfs(folder: Path, options: str) -> Iterator[Path]:
    """A small tmpfs at ``folder`` (root and a mount namespace needed: skipped otherwise)."""
    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.decode().strip()})")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def crawl_args(tmp_path: Path, url: str, **settings: Any) -> list[str]:
    merged = {**TEST_SETTINGS, "SKILLGRAPH_GRAPHS_DIR": tmp_path / "graphs", "SKILLGRAPH_ITEMS_DIR": tmp_path / "items",
              "SKILLGRAPH_STATE_PATH": tmp_path / "state.sqlite3",
              "SKILLGRAPH_SSRF_ALLOWLIST": f"127.0.0.1:{urlsplit(url).port}", **settings}
    args = ["crawl", "docs", "-a", f"url={url}"]
    for key, value in merged.items():
        args += ["-s", f"{key}={value}"]
    return args


@pytest.mark.parametrize(("setting", "make", "code", "says"), [
    ("SKILLGRAPH_GRAPHS_DIR", "file", 2, "it is a file, not a folder"),
    ("SKILLGRAPH_GRAPHS_DIR", "under-file", 2, "is a file, not a folder"),
    ("SKILLGRAPH_ITEMS_DIR", "file", 2, "it is a file, not a folder"),
    ("SKILLGRAPH_STATE_PATH", "folder", 2, "it is a folder, not a file"),
    ("SKILLGRAPH_STATE_PATH", "under-file", 2, "is a file, not a folder"),
    ("SKILLGRAPH_GRAPHS_DIR", "read-only", 1, "read-only"),
    ("SKILLGRAPH_ITEMS_DIR", "full", 1, "is full"),
    ("SKILLGRAPH_STATE_PATH", "full", 1, "is full"),
])
def test_an_unusable_output_path_is_one_sentence(setting: str, make: str, code: int, says: str,
                                                 tmp_path: Path) -> None:
    with contextlib.ExitStack() as stack:
        (tmp_path / "a-file").write_text("x")
        path = {"file": tmp_path / "a-file", "under-file": tmp_path / "a-file" / "deeper" / "x",
                "folder": tmp_path}.get(make)
        if make == "read-only":
            path = stack.enter_context(tmpfs(tmp_path / "ro", "ro,size=64k")) / "graphs"
        elif make == "full":
            disk = stack.enter_context(tmpfs(tmp_path / "full", "size=64k"))
            with contextlib.suppress(OSError), open(disk / "fill", "wb") as fill:
                fill.write(b"\0" * 128 * 1024)
            path = disk / "missing" / "parent" / "x"
        assert path is not None
        proc = scrapy(crawl_args(tmp_path, f"http://127.0.0.1:{free_port()}/docs/", **{setting: path}))
        assert_one_line(proc, code, f"{setting}={path} cannot be used")
        assert says in proc.stderr.splitlines()[-1]


def test_a_disk_that_fills_up_mid_build_fails_the_build_in_one_sentence(tmp_path: Path) -> None:
    """The graphs folder on a 400 kB disk, the Python library docs: the build stops, the sentence names the setting."""
    if not (PYTHON_DOCS / "library" / "index.html").exists():
        pytest.fail(f"{PYTHON_DOCS} missing: install Debian's python3.11-doc (.ci/run does)")
    server = SiteServer(PYTHON_DOCS)
    try:
        with tmpfs(tmp_path / "small", "size=400k") as disk:
            graphs = disk / "graphs"
            proc = scrapy(crawl_args(tmp_path, server.url + "library/", SKILLGRAPH_GRAPHS_DIR=graphs,
                                     SKILLGRAPH_MAX_PAGES=200, SKILLGRAPH_RENDER_ENABLED=False), timeout=240)
            assert_one_line(proc, 1, f"cannot write to SKILLGRAPH_GRAPHS_DIR={graphs}",
                            longest=400 + 2 * len(str(graphs)))
            assert "No space left on device" in proc.stderr.splitlines()[-1]
            name = default_graph_name(server.url + "library/")
            assert not (graphs / name).exists(), "nothing committed"
            assert not any((graphs / ".builds" / name).iterdir()), "the failed build was removed"
    finally:
        server.stop()


# -- a hostile site ---------------------------------------------------------------------------------------------------

#: Links of the hostile site's index, built to break file names (relative to the site root).
HOSTILE_LINKS = [
    "../../../etc/passwd.html", "%2e%2e/%2e%2e/secret.html", "%2E%2E%2F%2E%2E%2Fup.html", "a%2fb%2f..%2f..%2fc.html",
    "back\\slash\\..\\..\\x.html", "nul%00byte.html", "ctl%01%1f.html", "a" * 300 + ".html", "a" * 300 + "b.html",
    "dir/" + "b" * 250 + "/" + "c" * 250 + ".html", "Page.html", "page.html", "PAGE.html", "pAgE.html",
    ".hidden.html", "-dash.html", "llms.html", "sources.html", "llms-full.html", "%C3%BCn%C3%AF.html",
    "日本語.html", "q.html?x=../../y", "q.html?x=..%2F..%2Fz", "trailing./", "dots.../", "x.html#..%2F..%2Fz",
    "%252e%252e/double.html", "con.html", "a:b.html", "semi;colon.html", "sp%20ace.html", "tab%09.html",
]

WORDS = ["page", "graph", "token", "parse", "scope", "crawl", "index", "module", "function", "method", "class",
         "value", "return", "option", "setting", "example", "default", "error", "request", "response", "header"]


def body_for(path: str) -> bytes:
    """A page of its own: a heading and a few hundred words seeded by the path (no two pages alike)."""
    rng = random.Random(hashlib.sha256(path.encode("utf-8", "surrogateescape")).digest())
    paragraphs = "".join(
        "<p>" + " ".join(rng.choice(WORDS) for _ in range(60)) + f" ({rng.random():.12f}).</p>" for _ in range(6))
    title = f"Page {hashlib.sha256(path.encode('utf-8', 'surrogateescape')).hexdigest()[:10]}"
    return (f"<!doctype html><html><head><title>{title}</title></head><body><main><h1>{title}</h1>"
            f"{paragraphs}<pre><code>print({rng.randint(0, 10**9)})</code></pre></main></body></html>").encode()


class HostileSite(LoopbackHTTPServer):
    """Any path is a page; the index links to every :data:`HOSTILE_LINKS` entry. Records what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:
                site.asked.append(self.path)
                path = self.path.split("?", 1)[0]
                if path.endswith((".txt", ".xml")):
                    return self.answer(404, b"not found", "text/plain")
                if path in ("/", "/index.html"):
                    links = "".join(f'<li><a href="{link}">link {i}</a></li>' for i, link in enumerate(HOSTILE_LINKS))
                    return self.answer(200, body_for("/").replace(b"</main>", f"<ul>{links}</ul></main>".encode()))
                return self.answer(200, body_for(self.path))

            def answer(self, status: int, body: bytes, ctype: str = "text/html; charset=utf-8") -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        super().__init__(Handler)


def test_a_hostile_site_cannot_break_out_of_its_graph_folder(tmp_path: Path) -> None:
    site = HostileSite()
    outside_before = snapshot(tmp_path)
    try:
        proc = scrapy(crawl_args(tmp_path, site.url, SKILLGRAPH_RENDER_ENABLED=False, SKILLGRAPH_MAX_PAGES=0),
                      timeout=240)
    finally:
        site.stop()
    assert proc.returncode == 0, proc.stderr[-3000:]
    graphs = tmp_path / "graphs"
    graph = graphs / default_graph_name(site.url)
    real = graph.resolve()
    # nothing outside the graphs folder but the crawl's own items and state
    created = {p.split(os.sep)[0] for p in set(snapshot(tmp_path)) - set(outside_before)}
    assert created <= {"graphs", "items", "state.sqlite3", "state.sqlite3-journal", "state.sqlite3-wal",
                       "state.sqlite3-shm"}, created
    files = list(real.rglob("*"))
    assert all(p.parent == real and p.is_file() and not p.is_symlink() for p in files), files
    names = [p.name for p in files]
    assert len({n.casefold() for n in names}) == len(names), "names unique even where case is ignored"
    assert all(is_file_name(n) or n in ("sources.json", "llms.txt", "llms-full.txt") for n in names), names
    sources = json.loads((graph / "sources.json").read_text())
    pages = {p["url"]: p["file"] for p in sources["pages"]}
    assert len(pages) >= 20, sorted(pages)  # most hostile links are real pages, written under safe names
    assert all((real / file).is_file() for file in pages.values())
    assert len(set(pages.values())) == len(pages)
    # every URL the build asked the site for is a page or a skipped entry (robots.txt and probes excepted)
    accounted = set(pages) | {entry["url"] for entry in sources["skipped"]}
    accounted_paths = {unquote(urlsplit(url).path) for url in accounted}
    for asked in site.asked:
        path = unquote(asked.split("?", 1)[0])
        if path.endswith((".txt", ".xml")):
            continue
        assert path in accounted_paths, (asked, sorted(accounted_paths))


def test_mcp_reads_nothing_outside_a_graph_whatever_it_is_asked(tmp_path: Path) -> None:
    from scrapy.settings import Settings

    from skillgraph.store.mcp import SkillgraphTools, ToolError

    graphs = tmp_path / "graphs"
    folder = GraphFolder(graphs, "site")
    folder.write_now("page.md", "# Page\n")
    folder.commit({"name": "site", "pages": [{"url": "http://h/page.html", "file": "page.md"}], "skipped": []})
    (tmp_path / "secret.md").write_text("secret")
    (graphs / "..hidden").mkdir()
    ((graphs / "..hidden") / "sources.json").write_text("{}")
    tools = SkillgraphTools(Settings({"SKILLGRAPH_GRAPHS_DIR": str(graphs)}))
    assert [g["name"] for g in tools.list_graphs()["graphs"]] == ["site"]
    assert tools.read_page("site", "page.md")["markdown"] == "# Page\n"
    for graph, file in [("site", "../../secret.md"), ("..", "secret.md"), ("../graphs/site", "page.md"),
                        ("site", "/etc/passwd"), ("site", "..%2f..%2fsecret.md"), (".builds", "page.md")]:
        with pytest.raises(ToolError):
            tools.read_page(graph, file)
