"""The quality gates' ``assess``: every label, the status and header signals, the docs it must not flag.

Pages are real: the shared corpus's block pages (by path), small vendor pages of our
own in tests/fixtures/quality/, and the Python 3.11 docs. The evaluation script runs
in check mode as a subprocess, so the pinned figures (bench/quality_thresholds.json)
gate every change.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from skillgraph.quality import LABELS, SIGNATURES, Assessment, Check, assess
from tests.conftest import PYTHON_DOCS, ROOT, corpus_file, requires_corpus

FIXTURES = ROOT / "tests" / "fixtures" / "quality"
PINNED = json.loads((ROOT / "bench" / "quality_thresholds.json").read_text())


def page(name: str) -> str:
    path = FIXTURES / name if (FIXTURES / name).exists() else corpus_file(f"block_pages/{name}")
    return path.read_bytes().decode("utf-8", errors="replace")


@pytest.mark.parametrize(("name", "want"), sorted({**PINNED["block_pages"], **PINNED["fixtures"]}.items()))
def test_every_pinned_page_gets_its_label_at_200_and_at_its_status(name: str, want: dict) -> None:
    html = page(name)
    for status in {200, want["status"]}:
        result = assess(html, status=status, url="https://docs.example.org/page")
        assert result.block == want["label"], (status, result.checks["block"].detail)
        assert result.passed is (want["label"] is None)
        if want["label"] is not None:
            assert result.checks["block"].status == "fail" and result.score == 0.0


def test_every_block_page_in_the_corpus_is_pinned() -> None:
    folder = corpus_file("block_pages")
    assert {p.name for p in folder.glob("*.html")} == set(PINNED["block_pages"])
    expected = dict(line.split("\t")[:2] for line in (folder / "EXPECTED.tsv").read_text().splitlines()[1:])
    assert {name: (want["label"] or "") for name, want in PINNED["block_pages"].items()} == expected


def test_washington_post_paywall_markup_with_full_text_passes() -> None:
    result = assess(page("paywall-markup_full-article__washingtonpost_NEGATIVE.html"))
    assert result.passed and result.block is None and result.score > 0.8
    assert result.checks["block"].status == "warn" and "paywall" in result.checks["block"].detail


def test_soft_404_is_a_200_page_that_says_not_found() -> None:
    mkdocs = page("griffe__mkdocs-material_404.html")
    assert assess(mkdocs, status=200).block == "not-found"
    assert "heading" in assess(mkdocs).checks["block"].detail
    assert assess(mkdocs, status=404).checks["block"].detail == "not-found: HTTP 404"


def test_status_is_a_signal_of_its_own() -> None:
    docs = (PYTHON_DOCS / "library" / "json.html").read_text()
    assert assess(docs).passed
    assert assess(docs, status=404).block == "not-found"
    assert assess(docs, status=429).block == "rate-limit"
    assert assess(docs, status=500).block == "server-error"
    assert assess(docs, status=401).block == "login-wall"
    assert assess(docs, status=403).block == "forbidden"
    assert assess(docs, status=403, headers={"Server": "cloudflare"}).block == "cloudflare-block"
    # Cloudflare answers its JS challenge with 503: the markup names it, not the status.
    iuam = page("cloudflare_iuam_just-a-moment_2020-05-27__cloudscraper.html")
    assert assess(iuam, status=503, headers={"Server": "cloudflare"}).block == "cloudflare-challenge"


def test_decisive_headers_block_even_a_full_page_and_vendor_headers_alone_do_not() -> None:
    docs = (PYTHON_DOCS / "library" / "json.html").read_text()
    assert assess(docs, headers={"cf-mitigated": "challenge"}).block == "cloudflare-challenge"
    assert assess(docs, headers={"x-amzn-waf-action": "captcha"}).block == "aws-waf"
    assert assess(docs, headers={"X-Sucuri-Block": "BL01"}).block == "sucuri"
    # Every response of a protected site carries these: they only name who refused a 403.
    for headers in ({"Server": "cloudflare", "CF-RAY": "8b1c"}, {"x-datadome": "protected"},
                    {"Server": "AkamaiGHost"}, {"Set-Cookie": "incap_ses_123=abc; path=/"}):
        assert assess(docs, headers=headers).block is None
    assert assess(docs, status=403, headers={"x-datadome": "protected"}).block == "datadome"
    assert assess(docs, status=403, headers={"Set-Cookie": ["visid_incap_1=x", "incap_ses_2=y"]}).block == "imperva"


def test_scrapy_headers_and_bytes_work_as_headers() -> None:
    from scrapy.http.headers import Headers

    docs = (PYTHON_DOCS / "library" / "json.html").read_text()
    headers = Headers({"Server": "cloudflare", "Set-Cookie": ["a=1", "__cf_bm=2"], "CF-Mitigated": "challenge"})
    assert assess(docs, headers=headers).block == "cloudflare-challenge"
    assert assess(docs, status=403, headers=Headers({"Server": "ddos-guard"})).block == "ddos-guard"


def test_every_corpus_file_is_assessed_without_an_exception() -> None:
    """Whatever the shared corpus holds (robots.txt, sitemaps, JSON, llms files), assess answers."""
    files = [p for p in corpus_file("MANIFEST.tsv").parent.rglob("*") if p.is_file()]
    assert len(files) > 40
    for path in files:
        text = path.read_bytes()[:300_000].decode("utf-8", errors="replace")
        as_html = assess(text, markdown="" if path.suffix != ".html" else None, status=200)
        as_markdown = assess(None, markdown=text)
        for result in (as_html, as_markdown):
            assert 0.0 <= result.score <= 1.0 and result.block in (None, *LABELS), path


def test_hostile_markup_stays_linear() -> None:
    """Thousands of unclosed tags: every pattern stops at the next tag or a bounded window."""
    for html in ("<script>x" * 20000, "<h1>x" * 30000, "<title>" * 30000, "<!--" * 30000, "<" * 200000,
                 "<input " * 50000):
        assert assess(html, markdown="thin", title="t").score < 0.5
    for markdown in ("[" * 200000, "](" * 200000, "[a](" * 100000):
        assert assess(None, markdown=markdown).block is None


def test_markdown_only_pages_are_judged_on_their_text() -> None:
    short = "# Changelog\n\n- 1.2: fixed the CLI.\n"
    result = assess(None, markdown=short, title="Changelog")
    assert result.block is None and not result.passed
    assert result.checks["completeness"].status == "fail"
    assert assess(None, markdown="# 404 - Not found\n\nNothing here.\n").block == "not-found"
    rendered = corpus_file("doc_html/starlight_genaiscript/best-practices.rendered.md").read_text()
    assert assess(None, markdown=rendered).passed


def test_thin_docs_pages_that_mention_errors_or_login_are_not_blocked() -> None:
    for name in ("ok_docs_http_errors.html", "ok_docs_login_command.html", "ok_docs_about_bot_protection.html"):
        result = assess(page(name))
        assert result.block is None and result.passed, (name, result.to_json())


def test_vendor_markers_count_only_on_thin_pages() -> None:
    # The bot-protection docs page quotes cf-chl, g-recaptcha and _Incapsula_Resource in full text.
    result = assess(page("ok_docs_about_bot_protection.html"))
    assert result.block is None
    # The same markers with the article cut away are a challenge.
    thin = page("ok_docs_about_bot_protection.html").split("<h2>CAPTCHA")[0] + "</div></body></html>"
    assert assess(thin).block == "cloudflare-challenge"


def test_completeness_and_boilerplate() -> None:
    link_farm = "# Index of modules\n\n" + "\n".join(f"- [module {i}](/m{i}.html)" for i in range(60)) + "\n"
    farm = assess(None, markdown=link_farm, title="Index of modules")
    assert farm.checks["boilerplate"].status == "fail" and farm.passed, "an index page is thin on prose, not blocked"
    untitled = assess(None, markdown="Some text. " * 40, title="Intro")
    assert untitled.checks["completeness"].status == "warn" and untitled.passed
    empty = assess("<html><body><div id='root'></div><script src='/app.js'></script></body></html>")
    assert empty.score < 0.1 and not empty.passed and empty.block is None, "an SPA shell degrades to the next tier"
    assert not assess(None, markdown=link_farm, title="Index of modules", threshold=0.9).passed


def test_api_shape() -> None:
    result = assess(page("gitlab_429_too-many-requests.html"), status=429)
    assert isinstance(result, Assessment) and all(isinstance(c, Check) for c in result.checks.values())
    data = result.to_json()
    assert set(data) == {"score", "passed", "checks", "block"}
    assert set(data["checks"]) == {"block", "completeness", "boilerplate"}
    for check in data["checks"].values():
        assert set(check) == {"status", "detail", "score"} and check["status"] in {"pass", "warn", "fail"}
        assert 0.0 <= check["score"] <= 1.0
    json.dumps(data)
    assert len(SIGNATURES) >= 40 and {s.label for s in SIGNATURES} <= set(LABELS)
    assert {"cloudflare-challenge", "cloudflare-block", "captcha", "akamai", "imperva", "perimeterx", "datadome",
            "sucuri", "aws-waf", "ddos-guard", "login-wall", "paywall", "not-found", "rate-limit",
            "server-error"} <= {s.label for s in SIGNATURES}


@requires_corpus  # bench/quality_eval.py labels the shared corpus's block pages
def test_evaluation_script_holds_its_pinned_figures() -> None:
    """bench/quality_eval.py --check: labels, zero docs flagged, cost ratio against the extractor."""
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "quality_eval.py"), "--check", "--json"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["label_accuracy"] == 1.0 and summary["labelled"] >= 50
    assert summary["docs_pages"] >= 530 and summary["docs_flagged"] == 0
    assert summary["assess_to_extract"] < PINNED["max_assess_ratio"]


def test_near_empty_bot_fight_stub_is_a_challenge_not_thin_content() -> None:
    """440 bytes: only ``__CF$cv$params`` and a ``/cdn-cgi/bm/`` script (Cloudflare bot-fight mode)."""
    stub = page("cloudflare_bot_fight_stub.html")
    assert len(stub) < 600
    result = assess(stub)
    assert result.block == "cloudflare-challenge" and "near-empty" in result.checks["block"].detail
    # The same script injected into a page with content proves nothing.
    para = "<p>" + "Real documentation text about configuring the widget service in production. " * 40 + "</p>"
    full = stub.replace("<body>", f"<body><main><h1>Configure widgets</h1>{para}</main>")
    assert assess(full).block is None and assess(full).passed


def test_large_iuam_challenge_is_found_past_the_markup_window() -> None:
    """A 2015 IUAM page: a 140 kB obfuscated script before its jschl form and its text."""
    iuam = page("cloudflare_iuam_2015_large.html")
    assert len(iuam) > 100_000 and iuam.find("jschl_vc") > 65_536
    for html in (iuam, iuam.replace("<title>Just a moment...</title>", "<title></title>")):
        result = assess(html)
        assert result.block == "cloudflare-challenge", result.checks["block"].detail


def test_branded_soft_404_with_full_chrome_is_not_content() -> None:
    """Header, 60-link sidebar and footer around a short "404 / We couldn't find that page" column."""
    soft = page("soft_404_branded_chrome.html")
    result = assess(soft, status=200)
    assert result.block == "not-found" and not result.passed
    assert "heading" in result.checks["block"].detail


def test_new_block_signature_kinds_are_documented() -> None:
    assert {s.where for s in SIGNATURES} <= {"html", "title", "text", "header", "form", "stub"}
    assert any(s.where == "stub" for s in SIGNATURES)
