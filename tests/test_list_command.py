"""``scrapy list``: one ``name<TAB>domain`` line per spider (overrides Scrapy's own list)."""

from __future__ import annotations

from tests.conftest import run_scrapy
from tests.test_spiders import PUBLISHED


def test_list_shows_every_spider_with_its_domain() -> None:
    proc = run_scrapy(["list"], timeout=60)
    assert proc.returncode == 0, proc.stderr
    rows = [line.split("\t") for line in proc.stdout.splitlines()]
    assert all(len(row) == 2 for row in rows), proc.stdout
    listed = dict(rows)
    assert listed == {"docs": "-", **{name: domain for name, _, _, domain in PUBLISHED}}
    assert [name for name, _ in rows] == sorted(listed)
