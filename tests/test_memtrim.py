"""memtrim: a big page's freed heap goes back to the system after the page, small pages do not pay for it."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import pytest
from lxml import etree

from skillgraph.page.memtrim import TRIM_ABOVE, release_after


def rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_small_pages_are_not_trimmed() -> None:
    assert release_after(TRIM_ABOVE) is False
    assert release_after(0) is False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim and /proc are Linux's")
def test_the_freed_tree_of_a_big_page_leaves_the_process() -> None:
    page = ("<html><body>" + "".join(f"<div class='row'><a href='p{n}.html'>entry {n}</a><span>{n}</span></div>"
                                     for n in range(60_000)) + "</body></html>").encode()
    keep = [etree.fromstring(b"<p>%d</p>" % n) for n in range(2000)]  # live allocations above the tree's
    tree = etree.fromstring(page, etree.HTMLParser())
    keep += [etree.fromstring(b"<p>%d</p>" % n) for n in range(2000)]
    del tree
    gc.collect()
    before = rss_kb()
    assert release_after(len(page)) is True
    released = before - rss_kb()
    assert released > 10_000, f"only {released} kB given back"
    assert len(keep) == 4000
