from __future__ import annotations

import pytest

from skillgraph.spiders.base import rebase
from skillgraph.urls import (
    default_graph_name,
    file_stem_for,
    in_scope,
    parent_scopes,
    registrable_domain,
    same_site,
    scope_of,
)


@pytest.mark.parametrize(("url", "scope"), [
    ("https://h/docs", "https://h/docs/"),
    ("https://h/docs/", "https://h/docs/"),
    ("https://h/docs/intro.html", "https://h/docs/"),
    ("https://h/", "https://h/"),
    ("https://h", "https://h/"),
    ("https://h/a/b/c.md?x=1#y", "https://h/a/b/"),
])
def test_scope_of(url: str, scope: str) -> None:
    assert scope_of(url) == scope


def test_parent_scopes_nearest_first() -> None:
    assert parent_scopes("https://h/a/b/") == ["https://h/a/b/", "https://h/a/", "https://h/"]


def test_in_scope() -> None:
    assert in_scope("https://h/docs/x.html", "https://h/docs/")
    assert in_scope("https://h/docs", "https://h/docs/")
    assert not in_scope("https://h/docsx/a", "https://h/docs/")
    assert not in_scope("http://h/docs/a", "https://h/docs/")
    assert not in_scope("https://other/docs/a", "https://h/docs/")


def test_graph_name() -> None:
    assert default_graph_name("https://docs.python.org/3/") == "docs.python.org_3"
    assert default_graph_name("https://docs.python.org/3/library/json.html") == "docs.python.org_3_library"
    assert default_graph_name("http://127.0.0.1:8000/docs/") == "127.0.0.1_8000_docs"
    assert default_graph_name("https://h:443/") == "h"
    assert default_graph_name("https://h/index.html") == "h"
    # two scopes of one host are two graphs
    assert default_graph_name("http://h/library/") != default_graph_name("http://h/tutorial/")


def test_registrable_domain() -> None:
    assert registrable_domain("https://docs.python.org:8443/3/") == "python.org"
    assert registrable_domain("https://a.b.example.co.uk/") == "example.co.uk"
    assert registrable_domain("http://127.0.0.1:8000/") == "127.0.0.1"
    assert registrable_domain("http://localhost:5000/x") == "localhost"
    assert registrable_domain("http://[::1]:80/") == "::1"
    assert same_site("https://docs.x.com/a", "https://x.com/")
    assert not same_site("http://localhost:8000/a", "http://127.0.0.1:8000/")
    assert same_site("https://cdn.other.org/a", "https://x.com/", ("other.org",))
    assert not same_site("https://notother.org/a", "https://x.com/", ("other.org",))


@pytest.mark.parametrize(("url", "stem"), [
    ("https://h/docs/", "index"),
    ("https://h/docs/library/json.html", "library-json"),
    ("https://h/docs/guide/", "guide"),
    ("https://h/docs/guide/index.html", "guide"),
    ("https://h/docs/llms-full.txt#getting-started", "getting-started"),
    ("https://h/docs/Page_(x)?a=1", "Page_-x-a-1"),
])
def test_file_stem(url: str, stem: str) -> None:
    assert file_stem_for(url, "https://h/docs/") == stem


def test_rebase_onto_mirror() -> None:
    assert rebase("https://wiki.archlinux.org/title/Main", "http://127.0.0.1:9/") == "http://127.0.0.1:9/title/Main"
    assert rebase("https://x/docs/", "http://127.0.0.1:9/mirror/") == "http://127.0.0.1:9/mirror/"
    assert rebase("https://x/docs/", None) == "https://x/docs/"
