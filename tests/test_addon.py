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
    assert settings.getbool("ROBOTSTXT_OBEY") and settings.getfloat("DOWNLOAD_DELAY") == 1.0
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
