"""write_graph_llms: a graph's llms.txt (spec-shaped table of contents) and llms-full.txt (front matter per page)."""

from __future__ import annotations

import re
import stat
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from skillgraph.graph.llms import common_scope, describe, section_of, write_graph_llms
from skillgraph.strategy.llms import parse_llms_txt

ORIGIN = "https://docs.example.org"
PAGES = [
    ("index.md", "/docs/", "Example docs", "# Example docs\n\nWelcome to the **Example** documentation, start here.\n"),
    ("guide-install.md", "/docs/guide/install.html", "Install",
     "# Install\n\n```bash\npip install example\n```\n\n"
     "Install the package with pip, then [configure](config.md) it.\n"),
    ("reference-cli.md", "/docs/reference/cli.html", "",
     "# The `example` CLI\n\n| flag | meaning |\n|---|---|\n| -v | verbose |\n\nEvery flag of the command line tool, "
     "explained at length with examples for each of them so that this line is far longer than any description "
     "may be in an index, and then some more words to make quite sure of it.\n"),
    ("guide-usage.md", "/docs/guide/usage.html", "Usage [advanced]",
     "Just text without a heading, long enough to describe.\n"),
    ("a file.md", "/docs/faq.html", "FAQ", "# FAQ\n"),
]


def build(tmp_path: Path, pages: list[tuple[str, str, str, str]] = PAGES, summary: str | None = None
          ) -> tuple[Path, list[dict[str, Any]]]:
    folder = tmp_path / "graph"
    folder.mkdir()
    records = []
    for file, path, title, markdown in pages:
        (folder / file).write_text(markdown)
        records.append({"url": ORIGIN + path, "file": file, "title": title, "sha256": "x"})
    write_graph_llms(folder, "example", records, summary)
    return folder, records


def links(text: str) -> list[str]:
    return [unquote(m.group(1)) for m in re.finditer(r"^- \[(?:\\.|[^\]])*\]\(([^)]+)\)", text, re.M)]


def test_llms_txt_is_spec_shaped_in_site_order_and_every_link_is_a_file(tmp_path: Path) -> None:
    folder, _ = build(tmp_path)
    text = (folder / "llms.txt").read_text()
    lines = text.splitlines()
    assert lines[0] == "# example" and lines[2].startswith("> 5 pages of documentation from https://docs.example.org/docs/")
    assert re.findall(r"^## (.+)$", text, re.M) == ["Pages", "Guide", "Reference"]
    assert links(text) == ["index.md", "a file.md", "guide-install.md", "guide-usage.md", "reference-cli.md"]
    for target in links(text):
        assert (folder / target).is_file(), target
    assert "- [Example docs](index.md): Welcome to the Example documentation, start here." in lines
    assert "- [The `example` CLI](reference-cli.md): Every flag" in text, "no title: the page's H1"
    assert "- [Usage (advanced)](guide-usage.md): Just text" in text, "brackets every reader parses"
    assert "- [FAQ](a%20file.md)" in lines, "no description when the page has no text"
    described = next(line for line in lines if line.startswith("- [The `example` CLI]"))
    assert described.endswith("…") and len(described.split("): ", 1)[1]) <= 160
    assert "pip install" not in text, "code is never a description"


def test_our_own_llms_txt_parser_reads_it_back(tmp_path: Path) -> None:
    folder, _ = build(tmp_path, summary="The Example docs, as a skill graph.")
    index = parse_llms_txt((folder / "llms.txt").read_text(), ORIGIN + "/graphs/example/llms.txt")
    assert index.title == "example" and index.summary == "The Example docs, as a skill graph."
    assert [link.url.rsplit("/", 1)[1] for link in index.links] == [
        "index.md", "a%20file.md", "guide-install.md", "guide-usage.md", "reference-cli.md"]
    assert {link.section for link in index.links} == {"Pages", "Guide", "Reference"}


def test_llms_full_opens_every_page_with_its_url_in_front_matter(tmp_path: Path) -> None:
    folder, records = build(tmp_path)
    text = (folder / "llms-full.txt").read_text()
    blocks = re.split(r"(?:^|\n\n)---\nurl: (\S+)\n---\n", text)
    assert blocks[0] == ""
    urls, bodies = blocks[1::2], blocks[2::2]
    assert urls == [r["url"] for r in records]
    for (file, _, _, markdown), body in zip(PAGES, bodies, strict=True):
        assert body.strip("\n") == markdown.strip("\n"), file


def test_files_are_0644_and_replaced_atomically(tmp_path: Path) -> None:
    folder, records = build(tmp_path)
    for name in ("llms.txt", "llms-full.txt"):
        assert stat.S_IMODE((folder / name).stat().st_mode) == 0o644
    (folder / "index.md").write_text("# Example docs\n\nA new welcome page for everyone.\n")
    write_graph_llms(folder, "example", records)
    assert "A new welcome page" in (folder / "llms.txt").read_text()
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith(".")) == [], "no temp file left behind"


def test_a_missing_page_file_is_not_listed(tmp_path: Path) -> None:
    folder, records = build(tmp_path)
    (folder / "guide-usage.md").unlink()
    write_graph_llms(folder, "example", records)
    assert "guide-usage.md" not in links((folder / "llms.txt").read_text())
    assert "/docs/guide/usage.html" not in (folder / "llms-full.txt").read_text()


def test_one_place_is_one_section_and_corpus_sections_group_together(tmp_path: Path) -> None:
    corpus = [(f"s{i}.md", f"/llms-full.txt#part-{i}", f"Part {i}", f"# Part {i}\n\nSection {i} of the corpus.\n")
              for i in range(3)]
    folder, _ = build(tmp_path, corpus)
    text = (folder / "llms.txt").read_text()
    assert re.findall(r"^## (.+)$", text, re.M) == ["Pages"]
    assert links(text) == ["s0.md", "s1.md", "s2.md"]


def test_helpers() -> None:
    assert common_scope([ORIGIN + "/docs/a.html", ORIGIN + "/docs/guide/b.html"]) == ORIGIN + "/docs/"
    assert common_scope([ORIGIN + "/"]) == ORIGIN + "/"
    assert common_scope([ORIGIN + "/a", "https://other.org/b"]) == ""
    assert section_of(ORIGIN + "/docs/c-api/init.html", ORIGIN + "/docs/") == "C api"
    assert section_of(ORIGIN + "/docs/x.html#frag", ORIGIN + "/docs/") == "Pages"
    assert describe("# T\n\n```\ncode line that is long enough\n```\n\nReal text that describes it.\n") == \
        "Real text that describes it."
    assert describe("# json\n\n**Source code:** [Lib/json/__init__.py](https://x/y)\n\n---\n\n"
                    "JSON is a lightweight data interchange format.\n") == \
        "JSON is a lightweight data interchange format."
    # a paragraph set line by line with hard breaks (DocBook's literal layout: Valgrind's AUTHORS page) is read
    # as one text, not cut at its first line's backslash; an escaped backslash at a line's end is no break
    authors = ("# 1\\. AUTHORS\n\nJulian Seward was the original founder, designer and author of\\\n"
               "Valgrind, created the dynamic translation frameworks.\\\nNicholas Nethercote did the rest.\\\n")
    assert describe(authors) == ("Julian Seward was the original founder, designer and author of Valgrind, "
                                 "created the dynamic translation frameworks. Nicholas Nethercote did the rest.")
    assert describe("# T\n\nA path that ends in a backslash: C:\\\\\nand a second line.\n") == \
        "A path that ends in a backslash: C:\\\\"


def test_a_description_is_prose_not_a_stamp_an_annotation_or_legal_text() -> None:
    """Lines that open many pages but say nothing of them are passed over for the first line of prose:
    release and version stamps, Sphinx's version notes and C API annotations, bare URLs, a language bar,
    names alone, copyright lines and permission notices (seen on Valgrind's, PostgreSQL's, bzip2's, CMake's,
    the Python docs' and Apache's pages)."""
    prose = "The documentation is contained in six logically separate documents."
    for opening in ("Release 3.19.0 11 Apr 2022", "X Version 11, Release 7.7", "New in version 3.16.",
                    "Deprecated since version 3.0.", "*Return value: New reference.* *Part of the Stable ABI.*",
                    "*Part of the Limited API (as an opaque struct).*", "https://sourceware.org/bzip2/",
                    "Available Languages: en | fr | ko", "boost::units::cgs::cubic_centimetre",
                    "Copyright © 1996–2026 The PostgreSQL Global Development Group",
                    "Copyright © 2001, 2002 Joey Hess",
                    "Permission is granted to copy, distribute and/or modify this document under the terms of the "
                    "GNU Free Documentation License, Version 1.2.",
                    "THIS SOFTWARE IS PROVIDED BY THE AUTHOR AS IS AND ANY EXPRESS OR IMPLIED WARRANTIES, "
                    "INCLUDING, BUT NOT LIMITED TO, THE IMPLIED WARRANTIES OF MERCHANTABILITY, ARE DISCLAIMED.",
                    # the Developer's Reference's byline and licence (its llms.txt showed the byline)
                    "Developer's Reference Team &lt;[developers-reference@packages.debian.org]"
                    "(mailto:developers-reference%40packages.debian.org)>",
                    "Written by the Reference Team <team@lists.example.org> for every maintainer",
                    "A copy of the GNU General Public License is available in the distribution. You can also obtain "
                    "it by writing to the Free Software Foundation, Inc.",
                    # X.org's licence line, its authors' names, the Ada manual's banner
                    "Except as contained in this notice, the name of the X Consortium shall not be used in "
                    "advertising or otherwise to promote this Software without prior written authorization.",
                    "Sun Microsystems, Inc.", "Digital Equipment Corporation",
                    "Ada Reference Manual — [Legal Information](RM-TTL.md)"):
        assert describe(f"# Valgrind Documentation\n\n{opening}\n\n{prose}\n") == prose, opening
    # three words of prose describe; one legal term in prose is prose; a legal page is described by its text
    assert describe("# alloc\n\nMemory allocation APIs\n\nMore.\n") == "Memory allocation APIs"
    mit = "Libxml2 is the XML C parser and toolkit, free software available under the MIT License."
    assert describe(f"# libxml2\n\n{mit}\n") == mit
    gpl = "The licenses for most software are designed to take away your freedom to share and change it."
    assert describe(f"# GNU General Public License\n\nVersion 2, June 1991\n\n{gpl}\n",
                    "GNU General Public License") == gpl
    assert describe("# T\n\nRelease 3.19.0 11 Apr 2022\n") == "", "nothing to say rather than a stamp"


def test_descriptions_from_the_page_workers_give_the_same_llms_txt(tmp_path: Path) -> None:
    """The workers describe a page from the scan they already made; llms.txt is the one the commit would write."""
    from lxml import etree

    from skillgraph.tiers.evaluate import markup_attempt
    from tests.conftest import PYTHON_DOCS

    folder = tmp_path / "graph"
    folder.mkdir()
    pages, descriptions = [], {}
    for n, rel in enumerate(("library/json.html", "library/functions.html", "tutorial/index.html", "glossary.html",
                             "reference/datamodel.html", "library/index.html")):
        url = f"http://docs.test/{rel}"
        body = (PYTHON_DOCS / rel).read_bytes()
        root = etree.fromstring(body, etree.HTMLParser(collect_ids=False, encoding="utf-8"))
        attempt, _, _, notes = markup_attempt("html", url, 200, body.decode(), {}, root, 0.5)
        (folder / f"{n}.md").write_text(attempt.markdown)
        pages.append({"url": url, "file": f"{n}.md", "title": attempt.title})
        assert notes.description is not None and notes.description == describe(attempt.markdown, attempt.title)
        descriptions[url] = notes.description
    write_graph_llms(folder, "docs", pages)
    scanned = (folder / "llms.txt").read_text()
    write_graph_llms(folder, "docs", pages, descriptions=descriptions)
    assert (folder / "llms.txt").read_text() == scanned
    assert sum(1 for line in scanned.splitlines() if line.startswith("- [") and "): " in line) >= 5


def test_pages_with_title_and_description_are_listed_without_reading_their_file(tmp_path: Path) -> None:
    """The commit's llms.txt reads a page file only for what it lacks (a title, a description)."""
    from skillgraph.graph import llms

    folder = tmp_path / "graph"
    folder.mkdir()
    pages = [{"url": f"http://docs.test/{n}.html", "file": f"{n}.md"} for n in range(4)]
    for n in range(4):
        (folder / f"{n}.md").write_text(f"# Page {n}\n\nThe text of page {n}, long enough to describe.\n")
    titles = {pages[0]["url"]: "Zero", pages[1]["url"]: "One", pages[2]["url"]: " "}  # 2: blank, 3: none
    described = {page["url"]: f"described {i}" for i, page in enumerate(pages[:3])}
    write_graph_llms(folder, "docs", pages, titles=titles, descriptions=described)
    expected = (folder / "llms.txt").read_text()
    read: list[str] = []
    texts = llms.PageTexts(folder, pages, titles, described)
    real = llms.PageTexts.__getitem__

    def counted(self: llms.PageTexts, index: int) -> tuple[dict[str, object], str]:
        read.append(self.pages[index]["file"])
        return real(self, index)  # type: ignore[return-value]

    llms.PageTexts.__getitem__ = counted  # type: ignore[assignment,method-assign]
    try:
        urls = [page["url"] for page in pages]
        lines = "".join(llms.llms_index_lines("docs", texts, urls, None, common_scope(urls)))
    finally:
        llms.PageTexts.__getitem__ = real  # type: ignore[method-assign]
    assert read == ["2.md", "3.md"], "only the pages without a title or a description"
    assert lines == expected
    assert "- [Zero](0.md): described 0" in lines and "- [Page 2](2.md): described 2" in lines
