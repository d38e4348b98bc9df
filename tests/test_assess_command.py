"""``scrapy assess FILE [...]``: one JSON line per file, run as a real subprocess in the project."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, corpus_file

FIXTURES = ROOT / "tests" / "fixtures" / "quality"


def scrapy_assess(*args: str) -> tuple[int, list[dict], str]:
    proc = subprocess.run([sys.executable, "-m", "scrapy", "assess", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines()], proc.stderr


def test_one_json_line_per_file_with_labels() -> None:
    block_pages = sorted(corpus_file("block_pages").glob("*.html"))
    docs = corpus_file("doc_html/sphinx_furo_manim/quickstart.html")
    files = [*block_pages, docs, FIXTURES / "datadome_captcha.html"]
    code, lines, stderr = scrapy_assess(*map(str, files))
    assert code == 0, stderr
    assert [line["path"] for line in lines] == [str(f) for f in files]
    for line in lines:
        assert set(line) == {"path", "score", "passed", "checks", "block"}
        assert set(line["checks"]) >= {"block", "completeness", "boilerplate"}
        assert line["passed"] is (line["block"] is None and line["score"] >= 0.5)
    by_name = {Path(line["path"]).name: line for line in lines}
    assert by_name["cloudflare_iuam_just-a-moment_2020-05-27__cloudscraper.html"]["block"] == "cloudflare-challenge"
    assert by_name["sucuri_waf_js_redirect_2019__cloudscraper-node.html"]["block"] == "sucuri"
    assert by_name["griffe__mkdocs-material_404.html"]["block"] == "not-found"
    assert by_name["paywall-markup_full-article__washingtonpost_NEGATIVE.html"]["block"] is None
    assert by_name["paywall-markup_full-article__washingtonpost_NEGATIVE.html"]["passed"] is True
    assert by_name["quickstart.html"]["passed"] is True
    assert by_name["datadome_captcha.html"]["block"] == "datadome"
    assert stderr == "", "JSON on stdout, nothing else"


def test_status_and_url_options_and_markdown_files() -> None:
    page = corpus_file("doc_html/starlight_genaiscript/best-practices.index.html")
    twin = corpus_file("doc_html/starlight_genaiscript/best-practices.rendered.md")
    code, lines, _ = scrapy_assess("--status", "404", "--url", "https://microsoft.github.io/genaiscript/", str(page))
    assert code == 0 and lines[0]["block"] == "not-found" and lines[0]["checks"]["block"]["detail"].endswith("HTTP 404")
    code, lines, _ = scrapy_assess(str(twin))
    assert code == 0 and lines[0]["passed"] and lines[0]["block"] is None


def test_missing_file_is_reported_and_fails_the_exit_code(tmp_path: Path) -> None:
    good = FIXTURES / "soft_404.html"
    code, lines, _ = scrapy_assess(str(tmp_path / "nope.html"), str(good))
    assert code == 1
    assert lines[0]["path"].endswith("nope.html") and "FileNotFoundError" in lines[0]["error"]
    assert lines[1]["block"] == "not-found", "the other files are still assessed"


def test_no_file_is_a_usage_error() -> None:
    code, lines, stderr = scrapy_assess()
    assert code == 2 and lines == [] and "FILE" in stderr


def test_binary_input_is_not_assessed(tmp_path: Path) -> None:
    """Issue 14: random bytes never pass the gates; one line on stderr, an error line on stdout, exit 1."""
    noise = tmp_path / "noise.bin"
    noise.write_bytes(bytes(range(256)) * 40)
    code, lines, stderr = scrapy_assess(str(noise), str(FIXTURES / "soft_404.html"))
    assert code == 1
    assert lines[0] == {"path": str(noise), "error": "not an HTML or text file: binary data (NUL bytes)"}
    assert lines[1]["block"] == "not-found", "the other files are still assessed"
    assert stderr.strip().splitlines() == [f"error: {noise} is not an HTML or text file (binary data (NUL bytes)); "
                                           "not assessed"]
