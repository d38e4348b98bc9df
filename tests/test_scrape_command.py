"""``scrapy scrape URL [URL ...] [-o DIR]``: one page through the tiers and gates, no graph, no state."""

from __future__ import annotations

import re
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_scrapy
from tests.servers import Rule, SiteServer

BLOCK = (ROOT / "tests" / "fixtures" / "quality" / "datadome_captcha.html").read_bytes()
FENCE = re.compile(r"^```", re.M)


def state_settings(tmp_path: Path) -> list[str]:
    """Where a crawl would write: a scrape must leave every one of these absent."""
    return ["-s", f"SKILLGRAPH_GRAPHS_DIR={tmp_path / 'graphs'}", "-s", f"SKILLGRAPH_ITEMS_DIR={tmp_path / 'items'}",
            "-s", f"SKILLGRAPH_STATE_PATH={tmp_path / 'state' / 'state.sqlite3'}", "-s", "DOWNLOAD_DELAY=0"]


def scrape(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = run_scrapy(["scrape", *args, *state_settings(tmp_path)], timeout=180)
    for name in ("graphs", "items", "state"):
        assert not (tmp_path / name).exists(), f"a scrape wrote {name}"
    assert "Traceback" not in proc.stderr
    return proc


def outside_code(markdown: str) -> str:
    return re.sub(r"```.*?```|`[^`\n]*`", "", markdown, flags=re.S)


@pytest.fixture(scope="module")
def odd_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SiteServer]:
    root = tmp_path_factory.mktemp("odd")
    (root / "page.html").write_text("<html><head><title>Fine</title></head><body><main><h1>Fine</h1>"
                                    + "<p>A real paragraph of documentation text, long enough to pass.</p>" * 8
                                    + "</main></body></html>")
    server = SiteServer(root, rules={"/blocked.html": Rule(403, {"Content-Type": "text/html"}, BLOCK)})
    yield server
    server.stop()


def test_json_page_to_markdown_on_stdout(python_docs: SiteServer, tmp_path: Path) -> None:
    proc = scrape(tmp_path, python_docs.url + "library/json.html")
    assert proc.returncode == 0, proc.stderr[-3000:]
    markdown = proc.stdout
    assert markdown.startswith("# `json` — JSON encoder and decoder\n")
    assert "json.dumps" in markdown and len(FENCE.findall(markdown)) >= 10 and len(FENCE.findall(markdown)) % 2 == 0
    assert "```python\n>>> import json\n" in markdown
    assert not re.search(r"</?[a-z][a-z0-9]*[\s>/]", outside_code(markdown)), "no HTML tags outside code"
    assert "---\nurl:" not in markdown, "one URL: the markdown alone"


def test_several_pages_into_a_directory(python_docs: SiteServer, tmp_path: Path) -> None:
    out = tmp_path / "md"
    urls = [python_docs.url + "library/json.html", python_docs.url + "library/re.html"]
    proc = scrape(tmp_path, *urls, "-o", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == [str(out / "json.md"), str(out / "re.md")]
    assert "re.compile" in (out / "re.md").read_text()
    for path in out.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_several_pages_on_stdout_carry_front_matter(python_docs: SiteServer, tmp_path: Path) -> None:
    urls = [python_docs.url + "library/json.html", python_docs.url + "library/re.html"]
    proc = scrape(tmp_path, *urls)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert re.findall(r"^---\nurl: (\S+)\n---$", proc.stdout, re.M) == urls


def test_failed_pages_are_one_line_each_and_exit_1(python_docs: SiteServer, odd_site: SiteServer,
                                                    tmp_path: Path) -> None:
    missing = python_docs.url + "library/no-such-page.html"
    blocked = odd_site.url + "blocked.html"
    good = odd_site.url + "page.html"
    proc = scrape(tmp_path, missing, blocked, good)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 2, proc.stderr
    assert lines[0] == f"error: {missing}: HTTP 404: the server did not return the page (check the URL)"
    assert lines[1].startswith(f"error: {blocked}: ") and "datadome" in lines[1].lower()
    assert proc.stdout.startswith("---\nurl: " + good) and "A real paragraph" in proc.stdout


def test_ssrf_refusal_names_the_allowlist_value(odd_site: SiteServer, tmp_path: Path) -> None:
    url = odd_site.url + "page.html"
    proc = scrape(tmp_path, url, "-s", "SKILLGRAPH_SSRF_ALLOWLIST=127.0.0.1:1")
    assert proc.returncode == 1 and proc.stdout == ""
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith(f"error: {url}: refused by the SSRF guard (")
    assert line.endswith(f"-s SKILLGRAPH_SSRF_ALLOWLIST=127.0.0.1:{odd_site.port}")


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    proc = scrape(tmp_path)
    assert proc.returncode == 2
    proc = scrape(tmp_path, "notaurl")
    assert proc.returncode == 2 and "notaurl: not an http(s) URL" in proc.stderr
    proc = scrape(tmp_path, "http://127.0.0.1:1/x.html", "-s", "SKILLGRAPH_MAX_PAGES=-5")
    assert proc.returncode == 2 and "SKILLGRAPH_MAX_PAGES=-5" in proc.stderr


def test_the_scrape_spider_is_not_listed() -> None:
    proc = run_scrapy(["list"])
    assert proc.returncode == 0 and "scrape" not in proc.stdout
