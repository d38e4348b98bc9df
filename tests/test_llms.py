"""llms.txt / llms-full.txt parsing: unit cases and every real file in shared/corpus."""

from __future__ import annotations

import pytest

from skillgraph.strategy.llms import coalesce, looks_like_html, markdown_twin, parse_llms_txt, slugify, split_sections
from tests.conftest import CORPUS, requires_corpus

LLMS_TXT = sorted((CORPUS / "llms_txt").glob("*"))
LLMS_FULL = sorted((CORPUS / "llms_full").glob("*"))


@requires_corpus
def test_corpus_present() -> None:
    assert len(LLMS_TXT) >= 5 and len(LLMS_FULL) >= 5


@requires_corpus
@pytest.mark.parametrize("path", LLMS_TXT, ids=lambda p: p.name)
def test_every_corpus_llms_txt_parses(path) -> None:
    index = parse_llms_txt(path.read_text(errors="replace"), "https://example.org/docs/llms.txt")
    assert index.title
    assert index.links, "every real llms.txt in the corpus links to documents"
    assert all(link.url.startswith("https://") for link in index.links)


@requires_corpus
def test_spec_shape_sections_and_optional() -> None:
    index = parse_llms_txt((CORPUS / "llms_txt/fasthtml__nbs_llms.txt").read_text(), "https://www.fastht.ml/docs/llms.txt")
    assert index.title == "FastHTML"
    assert index.summary and "FastHTML" in index.summary
    sections = {link.section for link in index.links}
    assert {"Docs", "API", "Examples", "Optional"} <= sections
    assert any(link.optional for link in index.links)
    first = index.links[0]
    assert first.name == "FastHTML concise guide" and first.notes.startswith("A brief overview")


def test_relative_links_resolve_and_fragments_to_self_are_dropped() -> None:
    text = "# T\n\n## Docs\n\n- [A](a.html): x\n- [Self](#contact)\n- [B](/b.md)\n- [Mail](mailto:x@y.z)\n"
    index = parse_llms_txt(text, "https://h.example/docs/llms.txt")
    assert [link.url for link in index.links] == ["https://h.example/docs/a.html", "https://h.example/b.md"]


def test_links_in_code_fences_are_ignored() -> None:
    text = "# T\n\n```\n- [Not](not.html)\n```\n- [Yes](yes.html)\n"
    assert [link.name for link in parse_llms_txt(text, "https://h/").links] == ["Yes"]


def test_markdown_twin() -> None:
    assert markdown_twin("https://h/docs/page.html") == "https://h/docs/page.html.md"
    assert markdown_twin("https://h/docs/") == "https://h/docs/index.html.md"
    assert markdown_twin("https://h/docs/intro") == "https://h/docs/intro.md"
    assert markdown_twin("https://h/docs/intro.md") is None
    assert markdown_twin("https://h/llms-small.txt") is None


def test_looks_like_html() -> None:
    assert looks_like_html("\ufeff  <!DOCTYPE html><html>")
    assert looks_like_html("<html lang=en>")
    assert looks_like_html("# Title", "text/html; charset=utf-8")
    assert not looks_like_html("# Title\n<div>inline</div>", "text/plain")


def test_split_ignores_headings_in_fences_and_keeps_preamble() -> None:
    text = "intro line\n# One\n```\n# not a heading\n## nor this\n```\n## Two\n### three stays\n~~~~\n# x\n~~~~\n"
    sections = split_sections(text)
    assert [s.title for s in sections] == ["preamble", "One", "Two"]
    assert "".join(s.text for s in sections) == text
    assert sections[1].text.count("```") == 2


def test_slugs_are_stable_and_unique() -> None:
    sections = split_sections("# Getting Started!\nx\n# Getting Started!\ny\n## `API` [ref](http://x)\n")
    assert [s.slug for s in sections] == ["getting-started", "getting-started-1", "api-ref"]
    assert slugify("Café & Crème") == "café-crème"


@requires_corpus
@pytest.mark.parametrize("path", LLMS_FULL, ids=lambda p: p.name)
def test_every_corpus_llms_full_splits_losslessly(path) -> None:
    text = path.read_text(errors="replace")
    sections = split_sections(text)
    assert "".join(s.text for s in sections) == text
    files = coalesce(sections, 400, 49152)
    assert "".join(f.text for f in files) == text
    assert len({f.slug for f in files}) == len(files), "file names are unique"


@requires_corpus
@pytest.mark.parametrize("path", [p for p in LLMS_FULL if p.stat().st_size >= 1_000_000], ids=lambda p: p.name)
def test_large_corpora_coalesce_near_the_target(path) -> None:
    target = 49152
    sections = split_sections(path.read_text(errors="replace"))
    sizes = {s.text: len(s.text.encode()) for s in sections}
    files = coalesce(sections, 400, target)
    assert len(files) <= 400
    for f in files:
        size = len(f.text.encode())
        single = f.text in sizes
        assert size <= 2 * target or single, f"{f.slug}: {size} bytes from several sections"


@requires_corpus
def test_large_corpus_present_and_coalesced() -> None:
    big = CORPUS / "llms_full/genaiscript__gh-pages_llms-full.txt"
    assert big.stat().st_size >= 1_000_000
    sections = split_sections(big.read_text())
    assert len(sections) > 400
    assert len(coalesce(sections, 400, 49152)) < len(sections) // 10


def test_few_sections_are_not_coalesced() -> None:
    sections = split_sections("# A\nx\n# B\ny\n")
    assert coalesce(sections, 400, 10) == sections


DOCUSAURUS_CORPUS = (
    "---\nurl: /glossary\n---\n\n# Glossary\n\nSee [catchup](/glossary#catchup).\n\n## Catchup\n\nterm\n\n"
    "---\nurl: /intro\ntitle: Introduction\n---\n# Intro\n\ntext\n\n"
    "---\nsource_url: https://docs.example.org/faq\n---\nA page that opens with prose.\n\n"
    "Some text\n\n---\n\nafter a thematic break\n\n"
    "```yaml\n---\nurl: /in-a-fence\n---\n```\n"
)


def test_front_matter_belongs_to_the_section_it_opens() -> None:
    sections = split_sections(DOCUSAURUS_CORPUS)
    assert "".join(s.text for s in sections) == DOCUSAURUS_CORPUS
    assert [(s.title, s.url) for s in sections] == [
        ("Glossary", "/glossary"), ("Catchup", None), ("Intro", "/intro"),
        ("faq", "https://docs.example.org/faq")]
    glossary, catchup, intro, faq = sections
    assert glossary.text.startswith("---\nurl: /glossary\n---\n\n# Glossary")
    assert glossary.slug == "glossary", "the first file is the glossary page, not preamble.md"
    assert not catchup.text.rstrip().endswith("---"), "no section ends with the next page's front matter"
    assert intro.text.startswith("---\nurl: /intro") and intro.slug == "intro"
    assert faq.text.startswith("---\nsource_url:") and "after a thematic break" in faq.text
    assert "url: /in-a-fence" in faq.text, "front matter inside a code fence is code"


def test_front_matter_url_survives_coalescing_and_plain_corpora_have_none() -> None:
    sections = split_sections(DOCUSAURUS_CORPUS * 3)
    files = coalesce(sections, 2, 10_000)
    assert files[0].url == "/glossary"
    assert all(s.url is None for s in split_sections("# A\nx\n---\ntitle: not a page\n---\n# B\n"))
