"""The extractor's byte-identity guard (``bench/extract_identity.py``): its output is pinned page by page.

Speed work on ``skillgraph.extract`` must not change what it writes; this runs the guard
over the project's own extraction corpus (the Python 3.11 docs, ``tests/fixtures/extract``,
``../shared/corpus/doc_html``, a fixed sample of every installed Debian doc set) and fails
on any page whose markdown, title or verdict differs from its pin.  No timing is asserted.
"""

from __future__ import annotations

import json
from types import ModuleType

import pytest

from skillgraph.extract import extract_html
from tests.conftest import ROOT, load_bench_script


def load_guard() -> ModuleType:
    return load_bench_script("extract_identity")


@pytest.fixture(scope="module")
def guard() -> ModuleType:
    return load_guard()


def test_every_pinned_page_is_extracted_as_pinned(guard: ModuleType) -> None:
    pinned = json.loads(guard.PINS.read_text(encoding="utf-8"))
    found, skipped = guard.run()
    assert "fixtures" not in skipped and len(found) >= len(list((ROOT / "tests/fixtures/extract").glob("*.html")))
    differences = guard.compare(pinned, found, skipped)
    assert not differences, "output changed (explain each page, then re-pin with --pin):\n" + "\n".join(differences)


def test_the_guard_names_each_kind_of_difference(guard: ModuleType) -> None:
    """A changed markdown, title or verdict, a page without a pin and a pinned page gone are all reported."""
    page = ROOT / "tests" / "fixtures" / "extract" / "sphinx.html"
    result = extract_html(page.read_bytes(), guard.URL.format(set="fixtures", path="sphinx.html"))
    digests = guard.fingerprint(result)
    found = {"fixtures/sphinx.html": digests, "fixtures/new.html": digests}
    pinned = {"fixtures/sphinx.html": {**digests, "markdown": "0" * 16, "title": "0" * 16},
              "fixtures/gone.html": digests, "absent-set/page.html": digests}
    lines = guard.compare(pinned, found, ["absent-set"])
    assert lines == ["differs (markdown, title): fixtures/sphinx.html", "new (no pin): fixtures/new.html",
                     "pinned page not extracted: fixtures/gone.html"]
    same = {"fixtures/sphinx.html": digests, "fixtures/new.html": digests, "fixtures/gone.html": digests}
    assert guard.compare({**pinned, **same}, {**found, "fixtures/gone.html": digests}, ["absent-set"]) == []


def test_the_verdict_digest_covers_the_self_check(guard: ModuleType) -> None:
    page = ROOT / "tests" / "fixtures" / "extract" / "generic.html"
    result = extract_html(page.read_bytes(), None)
    assert guard.verdict(result).startswith(f"{result.generator}|{result.structure.status}|")
    assert guard.fingerprint(result)["verdict"] != guard.fingerprint(result)["title"]
