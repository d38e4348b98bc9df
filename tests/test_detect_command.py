"""``scrapy detect``: a bad URL, an unreachable site or a refused URL is ``"strategy": null`` with an error, exit 1."""

from __future__ import annotations

import json
import subprocess
import sys

from skillgraph.commands.detect import allowlist_entry, url_error
from tests.conftest import ROOT, run_scrapy
from tests.servers import SiteServer, free_port


def detect(*args: str) -> tuple[int, list[dict], str]:
    proc = subprocess.run([sys.executable, "-m", "scrapy", "detect", *args, "-s", "DOWNLOAD_DELAY=0"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines()], proc.stderr


def test_not_a_url() -> None:
    code, lines, stderr = detect("notaurl", "docs.python.org/3/")
    assert code == 1 and stderr == ""
    assert lines == [
        {"url": "notaurl", "strategy": None,
         "error": "not an http(s) URL: give a full URL such as https://docs.example.org/"},
        {"url": "docs.python.org/3/", "strategy": None,
         "error": "not a full URL: give the scheme too, e.g. https://docs.python.org/3/"},
    ]


def test_refused_url_names_the_allowlist_value(python_docs: SiteServer) -> None:
    url = python_docs.url + "library/"
    sent_before = len(python_docs.requests)  # a session-wide server: earlier tests' requests are listed
    code, [line], stderr = detect(url)
    assert code == 1 and stderr == ""
    assert line["strategy"] is None and line["url"] == url
    assert line["error"].startswith("refused by the SSRF guard (127.0.0.1 resolves to 127.0.0.1, which is loopback)")
    assert line["error"].endswith(f"allow it with -s SKILLGRAPH_SSRF_ALLOWLIST=127.0.0.1:{python_docs.port}")
    assert len(python_docs.requests) == sent_before, "nothing was sent"


def test_unreachable_site_and_a_good_one_in_one_run(python_docs: SiteServer) -> None:
    dead = f"http://127.0.0.1:{free_port()}/docs/"
    good = python_docs.url + "library/"
    proc = run_scrapy(["detect", dead, good, "-s", "DOWNLOAD_DELAY=0"], timeout=120)
    assert proc.returncode == 1, "one URL failed"
    assert "Traceback" not in proc.stderr
    bad, ok = (json.loads(line) for line in proc.stdout.splitlines())
    assert bad["strategy"] is None and bad["error"].startswith("site unreachable (")
    assert "check the URL and that the server is up" in bad["error"]
    assert ok["strategy"] == "crawl" and "error" not in ok


def test_helpers() -> None:
    assert url_error("https://docs.example.org/x") == ""
    assert url_error("ftp://example.org/").startswith("not an http(s) URL")
    assert url_error("http://example.org:99999/").startswith("not a valid URL")
    assert allowlist_entry("http://127.0.0.1:8000/docs/") == "127.0.0.1:8000"
    assert allowlist_entry("https://LocalHost/docs/") == "localhost:443"
    assert allowlist_entry("http://[::1]:8080/") == "[::1]:8080"
