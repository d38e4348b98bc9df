"""``scrapy detect URL [URL ...]``: print each site's strategy as one JSON line.

Detection runs the same SiteProfiler as the crawl, inside a real crawler (the
:class:`~skillgraph.strategy.detect.DetectSpider` the batch's detection phase runs too), so
its probes obey robots.txt, politeness and the SSRF guard. Sites are probed
concurrently (one probe at a time per site).

A URL that is not http(s), a site that never answers and a URL the SSRF guard
refuses are reported as ``"strategy": null`` with an ``"error"`` that says what
to do (the refusal names ``SKILLGRAPH_SSRF_ALLOWLIST`` with the exact value);
the exit status is then 1. Nothing is logged unless ``-L`` asks for it.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any
from urllib.parse import urlsplit

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from skillgraph.commands.settings_check import exit_on_bad_settings
from skillgraph.safety.ssrf import canonical_host
from skillgraph.strategy.detect import Detection, DetectSpider
from skillgraph.strategy.profiler import SiteProfile

logger = logging.getLogger(__name__)
_DEFAULT_PORTS = {"http": 80, "https": 443}


def url_error(url: str) -> str:
    """'' for an absolute http(s) URL with a host, else what is wrong and what to give instead."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises ValueError on a bad port)
    except ValueError as exc:
        return f"not a valid URL ({exc}): give a full URL such as https://docs.example.org/"
    if parts.scheme in ("http", "https") and parts.hostname:
        return ""
    if not parts.scheme and "." in url.split("/", 1)[0]:
        return f"not a full URL: give the scheme too, e.g. https://{url}"
    return "not an http(s) URL: give a full URL such as https://docs.example.org/"


def allowlist_entry(url: str) -> str:
    """``host:port`` of ``url`` as SKILLGRAPH_SSRF_ALLOWLIST spells it (``[v6]:port`` for IPv6)."""
    parts = urlsplit(url)
    host = canonical_host(parts.hostname or "")
    port = parts.port or _DEFAULT_PORTS.get(parts.scheme, 0)
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def profile_error(profile: SiteProfile) -> str:
    """Why detection learnt nothing about the site ('' when some probe got an HTTP answer)."""
    if not profile.probes or any(p.status is not None for p in profile.probes):
        return ""
    outcomes = [p.outcome for p in profile.probes]
    refused = next((o for o in outcomes if "SSRF guard" in o), None)
    if refused is not None:
        reason = refused.split("SSRF guard:", 1)[1].strip()
        return (f"refused by the SSRF guard ({reason}); if the site is yours, allow it with "
                f"-s SKILLGRAPH_SSRF_ALLOWLIST={allowlist_entry(profile.url)}")
    first = outcomes[0].removeprefix("error: ")
    return (f"site unreachable ({first}): check the URL and that the server is up, "
            "or set SKILLGRAPH_PROXY_URL if it is only reachable through a proxy")


class Command(ScrapyCommand):
    requires_project = True

    def process_options(self, args: list[str], opts: Any) -> None:
        super().process_options(args, opts)
        if not opts.loglevel:  # JSON on stdout, its "error" says what failed: no log unless -L asks
            assert self.settings is not None
            self.settings.set("LOG_LEVEL", "CRITICAL", priority="cmdline")

    def syntax(self) -> str:
        return "URL [URL ...]"

    def short_desc(self) -> str:
        return "Detect each site's strategy (llms-full, llms-index, sitemap, crawl)"

    def run(self, args: list[str], opts: Any) -> None:
        if not args:
            raise UsageError("give at least one URL")
        assert self.settings is not None and self.crawler_process is not None
        exit_on_bad_settings(self.settings)
        bad = {url: why for url in args if (why := url_error(url))}
        valid = list(dict.fromkeys(url for url in args if url not in bad))
        detections = [Detection(url) for url in valid]
        if detections:
            crawler = self.crawler_process.create_crawler(DetectSpider)
            self.crawler_process.crawl(crawler, sites=detections)
            self.crawler_process.start()
        profiles = {d.url: d.profile for d in detections if d.profile is not None}
        for url in args:
            profile = profiles.get(url)
            error = bad.get(url) or ("detection did not finish (run with -L DEBUG to see why)" if profile is None
                                     else profile_error(profile))
            if error:
                line: dict[str, Any] = {"url": url, "strategy": None, "error": error}
                if profile is not None:
                    line["probes"] = profile.to_json()["probes"]
                print(json.dumps(line))
                self.exitcode = 1
                continue
            assert profile is not None
            data = profile.to_json()
            print(json.dumps({k: data[k] for k in ("url", "strategy", "scope", "source", "probes")}))
        sys.stdout.flush()
