"""MediaWiki enumeration: title normalisation, real recorded API answers, and a real wiki end to end."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from scrapy.http import Request, TextResponse
from scrapy.utils.test import get_crawler

from skillgraph.spiders.wikis import ArchWikiSpider, GentooWikiSpider
from skillgraph.strategy.mediawiki import (
    ApiError,
    article_url,
    check_error,
    listed_titles,
    next_continue,
    normalize_title,
    parsed_page,
    site_info,
    title_path,
)
from tests.conftest import corpus_file
from tests.servers import SiteServer
from tests.wiki import Wiki

TRICKY = [  # (as written, as MediaWiki stores it, as it appears in the article URL)
    ("c++_faq ", "C++ faq", "C%2B%2B_faq"),
    ("Q&A: what? why!", "Q&A: what? why!", "Q%26A:_what%3F_why!"),
    ("100% coverage", "100% coverage", "100%25_coverage"),
    ('A "quoted" title', 'A "quoted" title', "A_%22quoted%22_title"),
    ("O'Brien's page", "O'Brien's page", "O%27Brien%27s_page"),
    ("ünïcödé – 日本語 page", "Ünïcödé – 日本語 page",
     "%C3%9Cn%C3%AFc%C3%B6d%C3%A9_%E2%80%93_%E6%97%A5%E6%9C%AC%E8%AA%9E_page"),
    ("équipe/Sub page", "Équipe/Sub page", "%C3%89quipe/Sub_page"),
    ("Semi;colon,comma", "Semi;colon,comma", "Semi;colon,comma"),
    ("Plus+sign", "Plus+sign", "Plus%2Bsign"),
    ("Tilde~page", "Tilde~page", "Tilde~page"),
    ("  many   spaces__and_underscores_ ", "Many spaces and underscores", "Many_spaces_and_underscores"),
    ("ßtraße", "ßtraße", "%C3%9Ftra%C3%9Fe"),  # no single-letter upper case: unchanged, as MediaWiki does
]


@pytest.mark.parametrize(("raw", "stored", "path"), TRICKY)
def test_titles_normalise_and_encode_like_mediawiki(raw: str, stored: str, path: str) -> None:
    assert normalize_title(raw) == stored
    assert title_path(raw) == path
    assert article_url("https://wiki.archlinux.org/title/$1", raw) == f"https://wiki.archlinux.org/title/{path}"


def test_case_sensitive_wikis_keep_the_first_letter() -> None:
    assert normalize_title("iPhone", first_letter=False) == "iPhone"
    assert title_path("iPhone", first_letter=False) == "iPhone"


def _recorded(name: str) -> dict[str, Any]:
    return json.loads(corpus_file(f"mediawiki/{name}").read_text())


def test_recorded_continuations_new_and_legacy() -> None:
    legacy = _recorded("pymediawiki_extract_legacy.json")["response"]
    assert next_continue(legacy) == {"blcontinue": "0|Arya_Stark|9612"}
    assert "Will" in listed_titles(legacy, "backlinks")
    search = _recorded("pymediawiki_extract_search.json")["response"]
    assert next_continue(search) == {"continue": "-||", "sroffset": "10"}
    assert listed_titles(search, "search")[0] == "Chess set"
    prop = _recorded("pymediawiki_extract_propcont.json")["response"]
    assert next_continue(prop) == {"continue": "gimcontinue||", "gimcontinue": "29401692|8-cube_t057_A5.svg"}
    assert next_continue({"batchcomplete": "", "query": {"allpages": []}}) is None


def test_recorded_siteinfo_gives_the_article_path() -> None:
    recorded = _recorded("pymediawiki_extract_siteinfo.json")
    info = site_info(recorded["response"], recorded["_api"])
    assert info is not None
    assert info.article_base == "http://awoiaf.westeros.org/index.php/$1"
    assert info.scope == "http://awoiaf.westeros.org/index.php/"
    assert info.first_letter and info.generator.startswith("MediaWiki")
    # On a mirror the API's own origin is kept, whatever $wgServer says.
    mirrored = site_info(recorded["response"], "http://127.0.0.1:8080/api.php")
    assert mirrored is not None and mirrored.article_base == "http://127.0.0.1:8080/index.php/$1"


def test_every_recorded_answer_parses() -> None:
    """All 149 real answers (en/fr Wikipedia, a non-WMF wiki; Jan 2017) go through the readers."""
    recording = json.loads(corpus_file("mediawiki/pymediawiki__mock_requests_2017.json").read_text())
    seen = {"continue": 0, "siteinfo": 0, "parse": 0}
    for api, answers in recording.items():
        for key, answer in answers.items():
            params = dict(json.loads(key))
            if not isinstance(answer, dict):
                continue  # opensearch answers are JSON arrays
            if next_continue(answer):
                seen["continue"] += 1
            if params.get("meta") == "siteinfo" and "general" in str(params.get("siprop", "")):
                info = site_info(answer, api)
                if answer:  # one recorded answer is empty: no siteinfo, no crash
                    assert info is not None and "$1" in info.article_base
                    seen["siteinfo"] += 1
            if params.get("action") == "parse":
                assert parsed_page(answer).title
                seen["parse"] += 1
    assert seen["continue"] >= 5 and seen["siteinfo"] >= 2 and seen["parse"] >= 1


def test_api_errors_are_raised_with_their_code() -> None:
    with pytest.raises(ApiError) as info:
        check_error({"error": {"code": "missingtitle", "info": "The page you specified doesn't exist."}})
    assert info.value.code == "missingtitle"
    with pytest.raises(ApiError):
        parsed_page([])


def _spider(cls: type, **kwargs: str) -> Any:
    crawler = get_crawler(cls, {"SKILLGRAPH_MEDIAWIKI_APLIMIT": "max"})
    spider = cls.from_crawler(crawler, **kwargs)
    crawler.spider = spider
    return spider


def test_enumeration_follows_legacy_query_continue() -> None:
    spider = _spider(ArchWikiSpider, base_url="http://127.0.0.1:9/")
    assert spider.api_endpoint == "http://127.0.0.1:9/api.php"
    recorded = _recorded("pymediawiki_extract_siteinfo.json")["response"]
    spider.wiki = site_info(recorded, spider.api_endpoint)
    first = spider.allpages_request({})
    query = parse_qs(urlsplit(first.url).query)
    assert query == {"action": ["query"], "list": ["allpages"], "apnamespace": ["0"],
                     "apfilterredir": ["nonredirects"], "aplimit": ["max"], "format": ["json"],
                     "formatversion": ["2"]}
    body = {"query-continue": {"allpages": {"apcontinue": "Q&A:_what?"}},
            "query": {"allpages": [{"pageid": 1, "ns": 0, "title": "C++ FAQ"},
                                   {"pageid": 2, "ns": 0, "title": "Zebra"}]}}
    response = TextResponse(first.url, body=json.dumps(body).encode(), encoding="utf-8", request=first)
    out = list(spider.parse_allpages(response))
    pages, more = out[:2], out[2:]
    assert [r.cb_kwargs["url"] for r in pages] == ["http://127.0.0.1:9/index.php/C%2B%2B_FAQ",
                                                   "http://127.0.0.1:9/index.php/Zebra"]
    assert parse_qs(urlsplit(pages[0].url).query)["page"] == ["C++ FAQ"]
    assert len(more) == 1 and parse_qs(urlsplit(more[0].url).query)["apcontinue"] == ["Q&A:_what?"]
    # The same titles again (a restarted batch) are not requested twice.
    again = TextResponse(first.url, body=json.dumps({"query": body["query"]}).encode(), encoding="utf-8",
                         request=Request(first.url))
    assert list(spider.parse_allpages(again)) == []
    assert spider.crawler.stats.get_value("skillgraph/mediawiki/duplicate_title") == 2


def test_arch_wiki_takes_every_content_page_once(crawl, mediawiki: Wiki) -> None:
    """The acceptance test: a real MediaWiki, enumerated in batches of 100 through apcontinue."""
    result = crawl("arch_wiki", base_url=mediawiki.url + "/",
                   settings={"SKILLGRAPH_MEDIAWIKI_APLIMIT": "100", "SKILLGRAPH_SSRF_ALLOWLIST": mediawiki.hostport,
                             "SKILLGRAPH_RENDER_ENABLED": "False"})
    assert result.returncode == 0, result.log[-3000:]
    sources = result.sources
    content = mediawiki.manifest["ns0_content"]
    urls = [p["url"] for p in sources["pages"]]
    assert len(urls) == len(set(urls)) == len(content)
    assert set(urls) == {article_url(mediawiki.url + "/wiki/$1", t) for t in content}
    assert result.stats["skillgraph/mediawiki/allpages_batches"] == -(-len(content) // 100)
    assert result.stats["skillgraph/graph/pages"] == len(content)
    assert sources["scrape_profile"]["strategy"] == "crawl"
    assert sources["scrape_profile"]["source"] == mediawiki.url + "/api.php"
    assert sources["truncated"] is None and all(p["tier"] == "html" for p in sources["pages"])
    stored = {normalize_title(t) for t in content}
    for skipped in mediawiki.manifest["ns0_redirects"] + mediawiki.manifest["other_ns"]:
        assert article_url(mediawiki.url + "/wiki/$1", skipped) not in urls, skipped
        assert skipped not in stored
    by_url = {p["url"]: p for p in sources["pages"]}
    faq = (result.graph / by_url[article_url(mediawiki.url + "/wiki/$1", "C++ FAQ")]["file"]).read_text()
    assert faq.startswith("# C++ FAQ") and "Page with a tricky title" in faq and "<div" not in faq
    assert all((result.graph / p["file"]).read_text().strip() for p in sources["pages"])
    # Rebuilt within SKILLGRAPH_RECENCY_HOURS: every article is known by its article URL and carried over.
    again = crawl("arch_wiki", base_url=mediawiki.url + "/",
                  settings={"SKILLGRAPH_SSRF_ALLOWLIST": mediawiki.hostport, "SKILLGRAPH_RENDER_ENABLED": "False"})
    assert again.returncode == 0, again.log[-3000:]
    assert {p["url"] for p in again.sources["pages"]} == set(urls)
    assert again.sources["changes"] == {"new": 0, "changed": 0, "unchanged": len(content), "removed": 0}
    assert again.stats["skillgraph/recency/skipped"] == len(content)
    assert "skillgraph/mediawiki/api_error" not in again.stats


def test_article_urls_are_the_wikis_own(mediawiki: Wiki) -> None:
    """MediaWiki serves each tricky title at exactly the URL we write for it (no redirect, no 404)."""
    tricky = [t for t in mediawiki.manifest["ns0_content"] if not t.startswith(("Pydoc/", "Generated page"))]
    assert len(tricky) >= 10
    for title in tricky:
        url = article_url(mediawiki.url + "/wiki/$1", title)
        with urllib.request.urlopen(url, timeout=60) as response:  # loopback only
            assert response.status == 200 and response.url == url, title


def test_wiki_without_api_fails_without_following_links(crawl, tmp_path: Path) -> None:
    root = tmp_path / "static"
    (root / "wiki").mkdir(parents=True)
    (root / "index.html").write_text('<html><body><a href="/wiki/Page">a page</a></body></html>')
    (root / "wiki" / "Page").write_text("<html><body><h1>Page</h1><p>Static.</p></body></html>")
    server = SiteServer(root)
    try:
        result = crawl("gentoo_wiki", base_url=server.url, settings={"SKILLGRAPH_RENDER_ENABLED": "False"})
    finally:
        server.stop()
    assert result.returncode == 1, "no graph: the crawl failed"
    assert result.log.rstrip().splitlines()[-1].startswith("skillgraph: graph gentoo_wiki was not built")
    assert "/wiki/Page" not in server.paths() and "/" not in server.paths()
    failed = json.loads((result.graphs / "gentoo_wiki.failed.json").read_text())
    assert failed["reason"] == "no pages were written"
    assert any(w["kind"] == "mediawiki" and w["label"] == "api_missing" for w in failed["warnings"])
    assert result.stats["skillgraph/mediawiki/api_missing"] == 1
    assert GentooWikiSpider.api == "https://wiki.gentoo.org/api.php"
