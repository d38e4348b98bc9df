"""SiteProfiler through ``scrapy detect``: probe order, acceptance rules and output shape."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import TEST_SETTINGS, run_scrapy
from tests.servers import Rule, SiteServer


def detect(*urls: str) -> list[dict]:
    args = ["detect", *urls]
    for key, value in TEST_SETTINGS.items():
        if key != "LOG_LEVEL":
            args += ["-s", f"{key}={value}"]
    proc = run_scrapy(args, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert len(lines) == len(urls)
    for line in lines:
        assert set(line) == {"url", "strategy", "scope", "source", "probes"}
        for probe in line["probes"]:
            assert set(probe) == {"url", "status", "outcome"}
    return lines


def test_detect_every_strategy_in_one_run(sites: dict[str, SiteServer]) -> None:
    scoped, stub, maps, crawl = (sites[n].url for n in ("llms_scoped", "llms_stub", "sitemap_site", "crawl_site"))
    results = detect(scoped + "docs/", stub + "docs/", maps + "docs/", crawl + "docs/index.html")
    assert [r["strategy"] for r in results] == ["llms-full", "llms-index", "sitemap", "crawl"]
    full, index, sitemap, crawled = results
    assert full["scope"] == scoped + "docs/" and full["source"] == scoped + "docs/llms-full.txt"
    assert [p["url"] for p in full["probes"]] == [scoped + "docs/llms-full.txt"]

    assert index["source"] == stub + "docs/llms.txt"
    assert index["probes"][0]["outcome"].startswith("rejected: ") and "characters" in index["probes"][0]["outcome"]

    probed = [p["url"] for p in sitemap["probes"]]
    assert probed[:6] == [maps + "docs/llms-full.txt", maps + "docs/llms.txt", maps + "llms-full.txt",
                          maps + "llms.txt", maps + ".well-known/llms.txt", maps + "docs/"]
    assert maps + "robots.txt" in probed
    assert probed.index(maps + "docs/sitemap.xml") < probed.index(maps + "sitemap.xml") < probed.index(
        maps + "maps/index.xml") < probed.index(maps + "maps/pages.xml.gz")
    assert sitemap["source"] == maps + "maps/index.xml"

    assert crawled["source"] == crawl + "docs/index.html"
    assert crawled["scope"] == crawl + "docs/"
    assert all(p["outcome"] != "accepted" for p in crawled["probes"])


def test_link_header_advertises_the_index(sites: dict[str, SiteServer]) -> None:
    site = sites["link_header"].url
    (result,) = detect(site + "docs/")
    assert result["strategy"] == "llms-index"
    assert result["source"] == site + "docs/ai/index.txt"
    outcomes = {p["url"]: p["outcome"] for p in result["probes"]}
    assert outcomes[site + "docs/"].startswith("accepted: rel=llms-txt")


@pytest.fixture
def well_known_site(tmp_path: Path):  # type: ignore[no-untyped-def]
    (tmp_path / ".well-known").mkdir()
    (tmp_path / ".well-known" / "llms.txt").write_text("# W\n\n- [Doc](/doc.md): the doc\n")
    # An HTML page answered for llms-full.txt with status 200 must be rejected, not taken as a corpus.
    server = SiteServer(tmp_path, rules={"/docs/llms-full.txt": Rule(
        status=200, headers={"Content-Type": "text/html"}, body=b"<!doctype html><html>" + b"x" * 5000)})
    yield server
    server.stop()


def test_well_known_and_html_rejection(well_known_site: SiteServer) -> None:
    site = well_known_site.url
    (result,) = detect(site + "docs/")
    assert result["strategy"] == "llms-index"
    assert result["source"] == site + ".well-known/llms.txt"
    outcomes = {p["url"]: p["outcome"] for p in result["probes"]}
    assert outcomes[site + "docs/llms-full.txt"] == "rejected: HTML"
    assert outcomes[site + "llms.txt"] == "missing"


def test_unreachable_site_is_a_null_strategy_with_an_error() -> None:
    import socket

    with socket.socket() as sock:  # a loopback port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = run_scrapy(["detect", f"http://127.0.0.1:{port}/docs/", "-s", "DOWNLOAD_DELAY=0"], timeout=120)
    assert proc.returncode == 1, "issue 14: an unreachable site is a failure, not a crawl"
    assert "Traceback" not in proc.stderr
    (result,) = [json.loads(line) for line in proc.stdout.splitlines()]
    assert result["strategy"] is None and result["error"].startswith("site unreachable (")
    assert all(p["status"] is None and p["outcome"].startswith("error: ") for p in result["probes"])
    assert len(result["probes"]) == 2, "a host that does not answer is not probed eleven times"
