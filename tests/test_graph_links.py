"""Links between pages of one graph point at the graph's files; code and outside links are left alone."""

from __future__ import annotations

from skillgraph.graph_links import LocalLinks, rewrite_links

SITE = "https://docs.example.com/docs/"


def links() -> LocalLinks:
    pages = [(SITE + "guide/a.html", "guide-a.md"), (SITE + "index.html", "index.md"),
             ("https://docs.example.com/llms-full.txt#install", "install.md")]
    return LocalLinks(pages, aliases={SITE: SITE + "index.html"},
                      old_files={"old-a.md": SITE + "guide/a.html", "gone.md": SITE + "gone.html"})


def test_links_to_pages_of_the_graph_become_files_with_their_fragment() -> None:
    md = (f"See [a]({SITE}guide/a.html), [a's API]({SITE}guide/a.html#api) and [home]({SITE}).\n"
          f"Outside: [b]({SITE}guide/b.html), [ex](https://example.com/x), [here](#local), [m](mailto:x@y.z).\n")
    text, count = rewrite_links(md, links().target)
    assert count == 3
    assert "[a](guide-a.md), [a's API](guide-a.md#api) and [home](index.md)." in text
    assert f"[b]({SITE}guide/b.html), [ex](https://example.com/x), [here](#local), [m](mailto:x@y.z)" in text


def test_code_is_copied_byte_for_byte() -> None:
    md = (f"```md\n[a]({SITE}guide/a.html)\n```\n\n- item\n\n  ~~~~\n  [a]({SITE}guide/a.html)\n  ```\n  ~~~~\n\n"
          f"Inline `[a]({SITE}guide/a.html)` and [a]({SITE}guide/a.html).\n")
    text, count = rewrite_links(md, links().target)
    assert count == 1, text
    assert text.count(f"[a]({SITE}guide/a.html)") == 3, "fenced (``` and ~~~ in a list) and inline code untouched"
    assert text.endswith("and [a](guide-a.md).\n")


def test_corpus_sections_are_known_by_their_full_url_only() -> None:
    target = links().target
    assert target("https://docs.example.com/llms-full.txt#install") == "install.md"
    assert target("https://docs.example.com/llms-full.txt") is None
    assert target("https://docs.example.com/llms-full.txt#other") is None


def test_pages_carried_over_follow_renamed_files_or_go_back_to_the_web() -> None:
    target = links().target
    assert target("old-a.md#api") == "guide-a.md#api", "the previous build's file name maps to the new file"
    assert target("gone.md#x") == SITE + "gone.html#x", "a page no longer in the graph: its web address"
    assert target("unknown.md") is None
    text, count = rewrite_links("[a](guide-a.md) [b](old-a.md)\n", target)
    assert (text, count) == ("[a](guide-a.md) [b](guide-a.md)\n", 1), "an unchanged destination is not counted"


def test_relative_links_of_markdown_sources_resolve_against_the_page() -> None:
    page = SITE + "guide/b.html"  # a page whose markdown came from its .md twin, links as the site wrote them
    md = "[a](a.html#x) [up](../index.html) [root](/other.html) [anchor](#here) [mail](mailto:a@b.c) [ftp](ftp://h/f)\n"
    text, count = rewrite_links(md, lambda dest: links().target(dest, page))
    assert text == ("[a](guide-a.md#x) [up](index.md) [root](https://docs.example.com/other.html) [anchor](#here) "
                    "[mail](mailto:a@b.c) [ftp](ftp://h/f)\n")
    assert count == 3
