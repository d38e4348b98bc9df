"""GcFreeze: once the engine runs, start-up's objects are out of the garbage collector's walks."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from scrapy import Spider, signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from skillgraph.extensions.gc_freeze import GcFreeze


@pytest.fixture
def unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()  # the rest of the test session collects as usual


def test_start_up_objects_are_frozen_when_the_engine_starts(unfrozen: None) -> None:
    crawler = get_crawler(Spider)
    extension = build_from_crawler(GcFreeze, crawler)  # held, as the extension manager holds it
    assert gc.get_freeze_count() == 0
    crawler.stats.open_spider()
    crawler.signals.send_catch_log(signals.engine_started)
    frozen = gc.get_freeze_count()
    assert frozen > 10_000, "the modules and objects of start-up"
    assert crawler.stats.get_value("skillgraph/gc/frozen") >= frozen  # frozen objects may still die of refcount
    survivor = [object()]  # made after start-up: still collected as usual
    assert gc.is_tracked(survivor) and gc.get_freeze_count() <= frozen
    assert extension.crawler is crawler
    crawler.signals.send_catch_log(signals.engine_stopped)
    assert gc.get_freeze_count() == 0, "back to the collector when the engine stops"


def test_young_generation_collected_less_often_while_the_engine_runs(unfrozen: None) -> None:
    from skillgraph.extensions.gc_freeze import YOUNG_THRESHOLD

    before = gc.get_threshold()
    crawler = get_crawler(Spider)
    extension = build_from_crawler(GcFreeze, crawler)
    crawler.stats.open_spider()
    try:
        crawler.signals.send_catch_log(signals.engine_started)
        assert gc.get_threshold() == (max(before[0], YOUNG_THRESHOLD), *before[1:])
    finally:
        crawler.signals.send_catch_log(signals.engine_stopped)
    assert gc.get_threshold() == before, "Python's thresholds back when the engine stops"
    assert extension.thresholds is None


def test_switched_off(unfrozen: None) -> None:
    with pytest.raises(NotConfigured):
        build_from_crawler(GcFreeze, get_crawler(Spider, {"SKILLGRAPH_GC_FREEZE_ENABLED": False}))
