"""The add-on: every component it registers loads, every setting it defaults is documented."""

from __future__ import annotations

import re

import pytest
from scrapy.settings import Settings
from scrapy.utils.misc import load_object

from skillgraph.addon import (
    DEFAULTS,
    DOWNLOADER_MIDDLEWARES,
    EXTENSIONS,
    ITEM_PIPELINES,
    POLITE,
    SPIDER_MIDDLEWARES,
    Addon,
    user_agent,
)
from tests.conftest import ROOT

COMPONENTS = {**DOWNLOADER_MIDDLEWARES, **ITEM_PIPELINES, **SPIDER_MIDDLEWARES, **EXTENSIONS}


@pytest.mark.parametrize("path", sorted(p for p, prio in COMPONENTS.items() if prio is not None))
def test_every_registered_component_loads(path: str) -> None:
    assert callable(load_object(path))


def test_priorities_are_unique_per_kind() -> None:
    for kind in (DOWNLOADER_MIDDLEWARES, ITEM_PIPELINES, EXTENSIONS):
        priorities = [p for p in kind.values() if p is not None]
        assert len(priorities) == len(set(priorities))


@pytest.mark.parametrize("name", sorted(DEFAULTS))
def test_every_setting_is_documented(name: str) -> None:
    docs = (ROOT / "docs" / "settings.md").read_text()
    assert re.search(rf"`{name}`", docs), f"{name} is missing from docs/settings.md"


def test_polite_defaults_and_user_agent() -> None:
    settings = Settings({"SKILLGRAPH_CONTACT_URL": "https://example.org/bot"}, priority="project")
    Addon().update_settings(settings)
    assert settings.getbool("ROBOTSTXT_OBEY") and settings.getfloat("DOWNLOAD_DELAY") == 0.25
    assert settings.getbool("AUTOTHROTTLE_ENABLED") and settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN") == 2
    assert settings.getint("DOWNLOAD_TIMEOUT") == 30 and settings.getint("DOWNLOAD_MAXSIZE") == 10 * 1024 * 1024
    assert not settings.getbool("TELNETCONSOLE_ENABLED") and not settings.getbool("REMOTE_CONTROL_ENABLED")
    assert settings["USER_AGENT"] == user_agent("https://example.org/bot")
    assert "skillgraph/" in settings["USER_AGENT"] and "https://example.org/bot" in settings["USER_AGENT"]
    for name in POLITE:
        assert name in settings


def test_project_settings_win_over_the_addon() -> None:
    settings = Settings({"DOWNLOAD_DELAY": 0, "SKILLGRAPH_MAX_PAGES": 5}, priority="project")
    Addon().update_settings(settings)
    assert settings.getfloat("DOWNLOAD_DELAY") == 0
    assert settings.getint("SKILLGRAPH_MAX_PAGES") == 5


def test_default_politeness_lets_a_default_crawl_reach_its_page_bound_in_time() -> None:
    """DESIGN.md "Settings": on a host answering in 100 ms a default crawl reaches SKILLGRAPH_MAX_PAGES within
    SKILLGRAPH_CRAWL_TIMEOUT. AutoThrottle spaces a host's requests by latency / target concurrency, never
    less than DOWNLOAD_DELAY; the pages may take at most half the timeout, the rest is for probes, the tier
    ladder's second requests and slower answers (bench/defaults.py measures the real thing: 0.70 of it).
    """
    settings = Settings()
    Addon().update_settings(settings)
    latency = 0.1
    spacing = max(settings.getfloat("DOWNLOAD_DELAY"), latency / settings.getfloat("AUTOTHROTTLE_TARGET_CONCURRENCY"))
    pages, timeout = settings.getint("SKILLGRAPH_MAX_PAGES"), settings.getfloat("SKILLGRAPH_CRAWL_TIMEOUT")
    assert pages * spacing <= timeout / 2, f"{pages} pages x {spacing} s > half of {timeout} s"
    # polite all the same: at most 2 in flight, an adaptive delay that starts and stays above a floor
    assert settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN") <= 2 and settings.getfloat("DOWNLOAD_DELAY") >= 0.2
    assert settings.getfloat("AUTOTHROTTLE_START_DELAY") >= settings.getfloat("DOWNLOAD_DELAY")
    assert settings.getfloat("AUTOTHROTTLE_TARGET_CONCURRENCY") <= 1.0


def test_switched_off_components_are_not_even_imported_and_a_user_can_switch_them_on() -> None:
    """Cookies, the remote control and the telnet console are off by default: out of Scrapy's component
    dicts, so their libraries (aiohttp, platformdirs, tldextract) cost no crawl its start-up."""
    import subprocess
    import sys

    probe = ("import sys; from scrapy.utils.project import get_project_settings; from skillgraph.addon import Addon; "
             "settings = get_project_settings(); settings.setdict({{'SKILLGRAPH_RENDER_ENABLED': False, {extra}}}, "
             "priority='cmdline'); Addon().update_settings(settings); "
             "print(sorted(settings.get_component_priority_dict_with_base('DOWNLOADER_MIDDLEWARES')), "
             "sorted(settings.get_component_priority_dict_with_base('EXTENSIONS'))); "
             "print(sorted(m for m in ('aiohttp', 'tldextract') if m in sys.modules))")
    off = subprocess.run([sys.executable, "-c", probe.format(extra="")], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    assert "RobotsTxtMiddleware" in off, off  # the probe lists the components
    assert "CookiesMiddleware" not in off and "RemoteControl" not in off and "TelnetConsole" not in off, off
    assert off.strip().endswith("[]"), "nothing imported them"
    on = subprocess.run([sys.executable, "-c", probe.format(extra="'COOKIES_ENABLED': True")], capture_output=True,
                        text=True, cwd=ROOT, check=True).stdout
    assert "scrapy.downloadermiddlewares.cookies.CookiesMiddleware" in on, "a user who turns cookies on gets them"
