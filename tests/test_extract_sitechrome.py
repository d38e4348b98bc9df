"""Site chrome by repetition (``skillgraph.extract.sitechrome``): linked lines on most of a site's pages."""

from __future__ import annotations

from skillgraph.extract.sitechrome import SiteChrome, candidates, strip

MENU = "- [Main Menu Entry](index.html)\n- [Reference Manual](api.html)\n"
LANGS = "Languages: [en](../en/p.html) | [fr](../fr/p.html)\n"


def page(i: int) -> str:
    return (f"# Page {i}\n\n{LANGS}\n{MENU}\n## Description\n\nText {i} about [its own topic](t{i}.html) here.\n\n"
            "```\n[not](a.html) a line of chrome: code\n```\n\n| Setting | Meaning |\n| --- | --- |\n| a | b |\n")


def test_lines_on_most_pages_are_the_sites() -> None:
    site = SiteChrome()
    for i in range(30):
        site.add(page(i))
    chrome = site.lines()
    assert chrome == {"- [Main Menu Entry](index.html)", "- [Reference Manual](api.html)",
                      "Languages: [en](../en/p.html) | [fr](../fr/p.html)"}
    out = strip(page(3), chrome)
    assert out == ("# Page 3\n\n## Description\n\nText 3 about [its own topic](t3.html) here.\n\n"
                   "```\n[not](a.html) a line of chrome: code\n```\n\n"
                   "| Setting | Meaning |\n| --- | --- |\n| a | b |\n")


def test_a_small_site_keeps_everything() -> None:
    site = SiteChrome()
    for i in range(5):
        site.add(page(i))
    assert site.lines() == frozenset()
    assert strip(page(1), site.lines()) == page(1)


def test_only_prose_linking_elsewhere_is_a_candidate() -> None:
    found = candidates("# [Heading link](h.html)\n\n- [On this page](#section) only\n\n"
                       "```\n[x](y.html) code line\n```\n"
                       "\nSee [the guide](guide.html) first.\n")
    assert found == {"See [the guide](guide.html) first."}


def test_pages_counted_are_bounded() -> None:
    site = SiteChrome(sample=25)
    for i in range(100):
        site.add(page(i))
    assert site.pages == 25 and "- [Reference Manual](api.html)" in site.lines()


def test_code_keeps_its_blank_lines() -> None:
    chrome = frozenset(["[main help file](index.html)"])
    md = "[main help file](index.html)\n\n```\nline one\n\n\nline four\n```\n"
    assert strip(md, chrome) == "```\nline one\n\n\nline four\n```\n"
