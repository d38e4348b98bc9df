"""check_settings: every typed SKILLGRAPH_* setting is validated once, with one line saying what is allowed."""

from __future__ import annotations

import subprocess
import sys

import pytest
from scrapy.settings import Settings

from skillgraph.addon import DEFAULTS, Addon
from skillgraph.commands.settings_check import RULES, SettingsError, check_settings, rules
from tests.conftest import ROOT


def cmdline(**values: object) -> Settings:
    """Add-on defaults, then values as ``-s`` gives them (strings, cmdline priority)."""
    settings = Settings()
    Addon().update_settings(settings)
    for name, value in values.items():
        settings.set(name, str(value), "cmdline")
    return settings


def test_the_defaults_pass() -> None:
    check_settings(cmdline())
    check_settings(Settings())  # nothing set at all: nothing to refuse


@pytest.mark.parametrize(("name", "value", "allowed"), [
    ("SKILLGRAPH_MAX_PAGES", "-5", "an integer >= 0 (0: no bound)"),
    ("SKILLGRAPH_MAX_PAGES", "abc", "an integer >= 0"),
    ("SKILLGRAPH_MAX_PAGES", "1.5", "an integer >= 0"),
    ("SKILLGRAPH_CRAWL_TIMEOUT", "-1", "a number >= 0"),
    ("SKILLGRAPH_CRAWL_TIMEOUT", "soon", "a number >= 0"),
    ("SKILLGRAPH_QUALITY_THRESHOLD", "1.5", "a number from 0 to 1"),
    ("SKILLGRAPH_QUALITY_THRESHOLD", "nan", "a number from 0 to 1"),
    ("SKILLGRAPH_RENDER_ENABLED", "yes please", "True or False"),
    ("SKILLGRAPH_SUMMARY_FORMAT", "xml", "one of text, json, none"),
    ("SKILLGRAPH_RENDER_BACKEND", "selenium", "one of playwright, splash"),
    ("SKILLGRAPH_BATCH_JOBS", "0", "an integer >= 1"),
    ("SKILLGRAPH_PROGRESS_INTERVAL", "0", "a number > 0"),
    ("SKILLGRAPH_MEDIAWIKI_APLIMIT", "lots", "max or an integer >= 1"),
    ("SKILLGRAPH_STORE_CHUNK_OVERLAP", "-1", "an integer >= 0"),  # from the default's type alone
    ("SKILLGRAPH_SSRF_ALLOWLIST", "127.0.0.1", "host:port entries, e.g. 127.0.0.1:8000"),
])
def test_bad_values_are_refused_with_one_line(name: str, value: str, allowed: str) -> None:
    with pytest.raises(SettingsError) as info:
        check_settings(cmdline(**{name: value}))
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"invalid setting {name}={value}: expected ") and allowed in message
    assert info.value.name == name and info.value.value == value


@pytest.mark.parametrize(("name", "value"), [
    ("SKILLGRAPH_MAX_PAGES", "0"), ("SKILLGRAPH_MAX_PAGES", "12"), ("SKILLGRAPH_CRAWL_TIMEOUT", "0.5"),
    ("SKILLGRAPH_RENDER_ENABLED", "false"), ("SKILLGRAPH_RENDER_ENABLED", "1"), ("SKILLGRAPH_SUMMARY_FORMAT", "JSON"),
    ("SKILLGRAPH_QUALITY_THRESHOLD", "1"), ("SKILLGRAPH_MEDIAWIKI_APLIMIT", "50"),
    ("SKILLGRAPH_RENDER_BACKEND", "splash"), ("SKILLGRAPH_SSRF_ALLOWLIST", "127.0.0.1:8000,[::1]:80"),
    ("SKILLGRAPH_SSRF_ALLOWLIST", ""),
])
def test_good_values_pass(name: str, value: str) -> None:
    check_settings(cmdline(**{name: value}))


def test_typed_project_values_are_checked_too() -> None:
    check_settings(Settings({"SKILLGRAPH_MAX_PAGES": 10, "SKILLGRAPH_RENDER_ENABLED": False}))
    with pytest.raises(SettingsError, match="SKILLGRAPH_MAX_PAGES=-1"):
        check_settings(Settings({"SKILLGRAPH_MAX_PAGES": -1}))
    with pytest.raises(SettingsError, match="SKILLGRAPH_DEDUP_ENABLED"):
        check_settings(Settings({"SKILLGRAPH_DEDUP_ENABLED": "maybe"}))


def test_every_rule_names_a_default_and_every_typed_default_has_a_rule() -> None:
    assert set(RULES) <= set(DEFAULTS), "a rule for a setting the add-on does not define"
    typed = {n for n, v in DEFAULTS.items() if isinstance(v, (bool, int, float))}
    assert typed <= set(rules())
    for name in ("SKILLGRAPH_PROGRESS_ENABLED", "SKILLGRAPH_PROGRESS_INTERVAL", "SKILLGRAPH_SUMMARY_FORMAT"):
        assert name in DEFAULTS and name in rules()


def test_a_command_exits_2_with_the_line() -> None:
    proc = subprocess.run([sys.executable, "-m", "scrapy", "markdown", "-s", "SKILLGRAPH_MAX_PAGES=-5",
                           str(ROOT / "demo" / "site" / "docs" / "index.html")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: invalid setting SKILLGRAPH_MAX_PAGES=-5: expected an integer >= 0 (0: no bound)"]
    assert proc.stdout == ""
