"""Domain spiders: their published roots pinned, and a real crawl of each against a loopback mirror.

The mirrors (tests/fixtures/mirrors/<spider>/) keep each real site's URL layout and
its kind of source (sitemap, llms.txt, llms-full.txt, plain links); the three
MediaWiki spiders run against the real MediaWiki of tests/wiki.py, ``python_docs``
against the real Python documentation. All crawls run at once in one session
fixture (a few at a time); each test then reads its own result.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from scrapy.spiderloader import SpiderLoader
from scrapy.utils.project import get_project_settings

from skillgraph.spiders.base import SkillgraphSpider
from skillgraph.urls import in_scope
from tests.conftest import PYTHON_DOCS, ROOT, TEST_SETTINGS, CrawlResult, corpus_file, run_scrapy
from tests.servers import SiteServer
from tests.wiki import Wiki

MIRRORS = ROOT / "tests" / "fixtures" / "mirrors"
HTML_TAG = re.compile(r"</?(?:html|body|div|span|p|a|nav|main|article|pre|code|ul|li|h[1-6])\b[^>]*>", re.I)
#: Crawls here test spiders, not the browser tier: no Chromium start-up per crawl.
SETTINGS = {**TEST_SETTINGS, "SKILLGRAPH_RENDER_ENABLED": "False"}

#: Every domain spider: (name, start URL, scope or None for the start URL's directory, domain tag).
PUBLISHED = [
    ("arch_wiki", "https://wiki.archlinux.org/", None, "archlinux.org"),
    ("gentoo_wiki", "https://wiki.gentoo.org/", None, "gentoo.org"),
    ("mikrotik_wiki", "https://wiki.mikrotik.com/", None, "mikrotik.com"),
    ("openwrt_wiki", "https://openwrt.org/docs/start", "https://openwrt.org/", "openwrt.org"),
    ("pfsense_docs", "https://docs.netgate.com/pfsense/en/latest/", None, "netgate.com"),
    ("kernel_docs", "https://docs.kernel.org/", None, "kernel.org"),
    ("python_docs", "https://docs.python.org/3/", None, "python.org"),
    ("mdn_web", "https://developer.mozilla.org/en-US/docs/Web/", None, "mozilla.org"),
    ("rust_book", "https://doc.rust-lang.org/book/", None, "rust-lang.org"),
    ("postgres_docs", "https://www.postgresql.org/docs/current/", None, "postgresql.org"),
    ("redis_docs", "https://redis.io/docs/latest/", None, "redis.io"),
    ("k8s_docs", "https://kubernetes.io/docs/", None, "kubernetes.io"),
    ("aws_docs", "https://docs.aws.amazon.com/", None, "aws.amazon.com"),
    ("terraform_registry", "https://registry.terraform.io/", None, "terraform.io"),
    ("fedora_docs", "https://docs.fedoraproject.org/en-US/docs/", "https://docs.fedoraproject.org/en-US/",
     "fedoraproject.org"),
    ("rhel_docs", "https://docs.redhat.com/en/documentation/red_hat_enterprise_linux/", None, "redhat.com"),
    ("freebsd_handbook", "https://docs.freebsd.org/en/books/handbook/", None, "freebsd.org"),
    ("ietf_rfcs", "https://www.rfc-editor.org/rfc/", None, "ietf.org"),
    ("huggingface_docs", "https://huggingface.co/docs", "https://huggingface.co/docs/", "huggingface.co"),
    ("langchain", "https://python.langchain.com/docs/", None, "langchain.com"),
    ("mariadb", "https://mariadb.com/kb/en/documentation/", "https://mariadb.com/kb/en/", "mariadb.com"),
    ("uptime_kuma", "https://github.com/louislam/uptime-kuma/wiki", "https://github.com/louislam/uptime-kuma/wiki/",
     "uptime.kuma.pet"),
    ("pandas_docs", "https://pandas.pydata.org/docs/", None, "pydata.org"),
    ("chakra_ui", "https://chakra-ui.com/docs/", None, "chakra-ui.com"),
    ("gcp_run", "https://cloud.google.com/run/docs", "https://cloud.google.com/run/docs/", "cloud.google.com"),
]


def loader() -> SpiderLoader:
    return SpiderLoader.from_settings(get_project_settings())


def spider_class(name: str) -> type[SkillgraphSpider]:
    cls = loader().load(name)
    assert issubclass(cls, SkillgraphSpider)
    return cls


def test_every_domain_spider_is_pinned() -> None:
    names = {n for n in loader().list() if n != "docs"}
    assert names == {row[0] for row in PUBLISHED}


@pytest.mark.parametrize(("name", "start", "scope", "domain"), PUBLISHED)
def test_published_start_url_scope_and_domain(name: str, start: str, scope: str | None, domain: str) -> None:
    cls = spider_class(name)
    assert (cls.start_url, cls.scope, cls.domain) == (start, scope, domain)
    spider = cls()
    assert spider.site_url == start and spider.site_domain == domain
    mirrored = cls(base_url="http://127.0.0.1:8000/")
    assert mirrored.site_url.startswith("http://127.0.0.1:8000/")
    assert mirrored.site_url.removeprefix("http://127.0.0.1:8000") == "/" + start.split("/", 3)[3]


def test_scoped_spiders_stay_out_of_the_rest_of_their_site() -> None:
    gcp = spider_class("gcp_run")()
    assert gcp.site_scope == "https://cloud.google.com/run/docs/"
    assert in_scope("https://cloud.google.com/run/docs/deploying", gcp.site_scope)
    assert not in_scope("https://cloud.google.com/storage/docs", gcp.site_scope)
    assert not in_scope("https://cloud.google.com/run", gcp.site_scope)
    mariadb = spider_class("mariadb")()
    assert mariadb.site_scope == "https://mariadb.com/kb/en/"
    assert not in_scope("https://mariadb.com/pricing/", mariadb.site_scope)
    openwrt = spider_class("openwrt_wiki")
    assert openwrt.sections == ("/docs/", "/toh/") and openwrt.strategy == "sitemap"
    wikis = [spider_class(n) for n in ("arch_wiki", "gentoo_wiki", "mikrotik_wiki")]
    assert [w.api for w in wikis] == ["https://wiki.archlinux.org/api.php", "https://wiki.gentoo.org/api.php",
                                      "https://wiki.mikrotik.com/api.php"]


@dataclass
class Mirror:
    strategy: str
    pages: set[str]  # page paths the graph must hold exactly (or at least, with `exact=False`)
    never: set[str]  # paths never requested
    exact: bool = True


MIRROR_EXPECT: dict[str, Mirror] = {
    "pfsense_docs": Mirror("crawl", {"/pfsense/en/latest/", "/pfsense/en/latest/install/",
                                     "/pfsense/en/latest/firewall/"}, {"/solutions/"}),
    "kernel_docs": Mirror("crawl", {"/", "/admin-guide/index.html", "/process/submitting-patches.html"}, set()),
    "pandas_docs": Mirror("crawl", {"/docs/", "/docs/user_guide/index.html",
                                    "/docs/reference/api/pandas.DataFrame.html"}, {"/about/index.html"}),
    "rust_book": Mirror("crawl", {"/book/", "/book/ch01-00-getting-started.html", "/book/ch01-01-installation.html"},
                        {"/std/index.html"}),
    "postgres_docs": Mirror("crawl", {"/docs/current/", "/docs/current/tutorial-start.html",
                                      "/docs/current/sql-select.html"}, {"/about/"}),
    "redis_docs": Mirror("crawl", {"/docs/latest/", "/docs/latest/commands/get/",
                                   "/docs/latest/develop/data-types/"}, {"/pricing/"}),
    "aws_docs": Mirror("crawl", {"/", "/lambda/latest/dg/welcome.html", "/AmazonS3/latest/userguide/Welcome.html"},
                       set()),
    "terraform_registry": Mirror("crawl", {"/", "/providers/hashicorp/aws/latest/docs", "/browse/providers"}, set()),
    "fedora_docs": Mirror("crawl", {"/en-US/docs/", "/en-US/quick-docs/", "/en-US/fedora/latest/"}, {"/de/docs/"}),
    "rhel_docs": Mirror("crawl", {"/en/documentation/red_hat_enterprise_linux/",
                                  "/en/documentation/red_hat_enterprise_linux/9/html/configuring_basic_system_settings/index",
                                  "/en/documentation/red_hat_enterprise_linux/9/html/security_hardening/index"},
                        {"/en/products"}),
    "freebsd_handbook": Mirror("crawl", {"/en/books/handbook/", "/en/books/handbook/basics/",
                                         "/en/books/handbook/ports/"}, {"/en/books/faq/"}),
    "ietf_rfcs": Mirror("crawl", {"/rfc/rfc9110.html", "/rfc/rfc9112.html"}, {"/rfc/rfc9110.txt", "/rfc/rfc9112.txt"},
                        exact=False),
    "huggingface_docs": Mirror("crawl", {"/docs/", "/docs/transformers/index", "/docs/hub/index"}, {"/models"}),
    "uptime_kuma": Mirror("crawl", {"/louislam/uptime-kuma/wiki/", "/louislam/uptime-kuma/wiki/Installation",
                                    "/louislam/uptime-kuma/wiki/Reverse-Proxy"}, {"/louislam/uptime-kuma/issues"}),
    "gcp_run": Mirror("crawl", {"/run/docs/", "/run/docs/quickstarts", "/run/docs/deploying"},
                      {"/run", "/run/", "/storage/docs"}),
    "mariadb": Mirror("crawl", {"/kb/en/documentation/", "/kb/en/select/", "/kb/en/installing-mariadb/"},
                      {"/", "/pricing/"}),
    "k8s_docs": Mirror("sitemap", {"/docs/home/", "/docs/concepts/overview/", "/docs/tasks/"},
                       {"/blog/2024/release/"}),
    "openwrt_wiki": Mirror("sitemap", {"/docs/start", "/docs/guide-user/start", "/toh/start", "/toh/tp-link/archer_c7"},
                           {"/start", "/playground/test"}),
    "mdn_web": Mirror("sitemap", {"/en-US/docs/Web/HTML", "/en-US/docs/Web/CSS", "/en-US/docs/Web/JavaScript"},
                      {"/en-US/docs/Learn_web_development", "/fr/docs/Web/HTML"}),
    "langchain": Mirror("llms-index", {"/docs/introduction/", "/docs/tutorials/llm_chain/", "/docs/concepts/"},
                        {"/"}),
}


def serve_mirror(name: str, tmp: Path) -> SiteServer:
    """Copy a mirror, start it, then write its origin into sitemaps, robots.txt and llms files."""
    root = tmp / name
    if name == "python_docs":
        root.mkdir()
        (root / "3").symlink_to(PYTHON_DOCS, target_is_directory=True)  # the real docs, at their real path
        return SiteServer(root)
    shutil.copytree(MIRRORS / name, root)
    if name == "mdn_web":  # MDN's real robots.txt (it lists the sitemap)
        shutil.copyfile(corpus_file("robots/developer.mozilla.org.robots.txt"), root / "robots.txt")
    server = SiteServer(root)
    origin = server.url.rstrip("/")
    for path in [*root.rglob("*.xml"), *root.rglob("*.txt")]:
        text = path.read_text("utf-8")
        path.write_text(text.replace("{{ORIGIN}}", origin).replace("https://developer.mozilla.org", origin), "utf-8")
    for xml in (root / "sitemaps").rglob("*.xml") if name == "mdn_web" else ():
        xml.with_name(xml.name + ".gz").write_bytes(gzip.compress(xml.read_bytes()))
        xml.unlink()
    return server


@dataclass
class MirrorRun:
    server: SiteServer | None
    result: CrawlResult


def _crawl(name: str, tmp: Path, base_url: str, settings: dict[str, Any]) -> CrawlResult:
    graphs, stats = tmp / "graphs", tmp / f"{name}.stats.json"
    merged = {**SETTINGS, "SKILLGRAPH_GRAPHS_DIR": graphs, "SKILLGRAPH_STATS_FILE": stats,
              "SKILLGRAPH_ITEMS_DIR": tmp / "items" / name, "SKILLGRAPH_STATE_PATH": tmp / f"{name}.state.sqlite3",
              **settings}
    args = ["crawl", name, "-a", f"base_url={base_url}"]
    for key, value in merged.items():
        args += ["-s", f"{key}={value}"]
    proc = run_scrapy(args, timeout=240)
    data = json.loads(stats.read_text()) if stats.exists() else {}
    return CrawlResult(proc.returncode, graphs, name, proc.stderr, data)


@pytest.fixture(scope="session")
def mirror_runs(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Any:
    try:
        mediawiki: Wiki | None = request.getfixturevalue("mediawiki")
    except pytest.skip.Exception:  # no ../shared/tools beside the clone: the other mirrors still run
        mediawiki = None
    tmp = tmp_path_factory.mktemp("mirrors")
    servers = {name: serve_mirror(name, tmp) for name in [*MIRROR_EXPECT, "chakra_ui", "python_docs"]}
    jobs = {name: (server.url, {}) for name, server in servers.items()}
    # Bounded builds of big sites: few requests in flight, so little is fetched past the bound.
    jobs["python_docs"] = (servers["python_docs"].url, {"SKILLGRAPH_MAX_PAGES": 5, "CONCURRENT_REQUESTS_PER_DOMAIN": 2})
    for wiki in ("gentoo_wiki", "mikrotik_wiki") if mediawiki is not None else ():
        jobs[wiki] = (mediawiki.url + "/", {"SKILLGRAPH_MAX_PAGES": 3, "CONCURRENT_REQUESTS_PER_DOMAIN": 2})
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {name: pool.submit(_crawl, name, tmp, url, settings) for name, (url, settings) in jobs.items()}
        runs = {name: MirrorRun(servers.get(name), future.result()) for name, future in futures.items()}
    yield runs
    for server in servers.values():
        server.stop()


def built(run: MirrorRun) -> dict[str, Any]:
    result = run.result
    assert result.returncode == 0, result.log[-3000:]
    assert result.graph.is_symlink(), result.log[-3000:]
    sources = result.sources
    assert sources["pages"], "a crawl with no pages is a failure"
    for page in sources["pages"]:
        text = (result.graph / page["file"]).read_text()
        assert text.strip() and not HTML_TAG.search(text), page["url"]
    return sources


@pytest.mark.parametrize("name", sorted(MIRROR_EXPECT))
def test_mirror_crawl(name: str, mirror_runs: dict[str, MirrorRun]) -> None:
    run, expect = mirror_runs[name], MIRROR_EXPECT[name]
    sources = built(run)
    assert run.server is not None
    origin = run.server.url.rstrip("/")
    assert sources["scrape_profile"]["strategy"] == expect.strategy
    paths = {p["url"].removeprefix(origin) for p in sources["pages"]}
    if expect.exact:
        assert paths == expect.pages
    else:
        assert expect.pages <= paths
    requested = {path.split("?")[0] for path in run.server.paths()}
    assert not expect.never & requested, f"out of scope requested: {expect.never & requested}"
    for page in sources["pages"]:
        text = (run.result.graph / page["file"]).read_text()
        assert f"{name} mirror" in text or page["url"] == origin + "/rfc/", page["url"]
    items = list((run.result.graph.parent.parent / "items" / name).rglob("*.json"))
    assert len(items) == len(sources["pages"])
    assert {json.loads(p.read_text())["domain"] for p in items} == {spider_class(name).domain}


def test_openwrt_keeps_only_docs_and_toh(mirror_runs: dict[str, MirrorRun]) -> None:
    run = mirror_runs["openwrt_wiki"]
    built(run)
    assert run.result.stats["skillgraph/sections/out_of_section"] == 2


def test_chakra_ui_llms_full_corpus(mirror_runs: dict[str, MirrorRun]) -> None:
    run = mirror_runs["chakra_ui"]
    sources = built(run)
    assert run.server is not None
    assert sources["scrape_profile"]["strategy"] == "llms-full"
    assert sources["scrape_profile"]["source"] == run.server.url + "llms-full.txt"
    assert len(sources["pages"]) >= 10 and {p["tier"] for p in sources["pages"]} == {"corpus"}
    corpus = (MIRRORS / "chakra_ui" / "llms-full.txt").read_text()
    sections = [(run.result.graph / p["file"]).read_text() for p in sources["pages"]]
    assert all(section in corpus for section in sections)
    assert sum(map(len, sections)) == len(corpus), "the sections together hold the whole corpus"


def test_python_docs_on_the_real_documentation(mirror_runs: dict[str, MirrorRun]) -> None:
    run = mirror_runs["python_docs"]
    sources = built(run)
    assert run.server is not None
    assert sources["scrape_profile"]["strategy"] == "crawl"
    assert len(sources["pages"]) == 5 and sources["truncated"]["reason"] == "max_pages"
    assert all(p["url"].startswith(run.server.url + "3/") for p in sources["pages"])


@pytest.mark.parametrize("name", ["gentoo_wiki", "mikrotik_wiki"])
def test_wiki_spiders_enumerate_the_api(name: str, mirror_runs: dict[str, MirrorRun], mediawiki: Wiki) -> None:
    run = mirror_runs[name]
    sources = built(run)
    assert sources["scrape_profile"]["source"] == mediawiki.url + "/api.php"
    assert len(sources["pages"]) == 3 and sources["truncated"]["reason"] == "max_pages"
    assert all(p["url"].startswith(mediawiki.url + "/wiki/") for p in sources["pages"])
    assert run.result.stats["skillgraph/mediawiki/titles"] == len(mediawiki.manifest["ns0_content"])
