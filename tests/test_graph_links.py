"""Links between pages of one graph point at the graph's files; code and outside links are left alone."""

from __future__ import annotations

import functools
import multiprocessing
import re
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from skillgraph.graph.folder import PARALLEL_LINKS_MIN, GraphFolder
from skillgraph.graph.links import LocalLinks, rewrite_links

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


def test_worker_processes_rewrite_a_large_graph_to_the_same_files_and_hashes(tmp_path: Path) -> None:
    """The commit hands chunks of a large graph to the page workers: same files, same hashes, same count."""
    graphs: dict[str, tuple[GraphFolder, list[dict[str, str]]]] = {}
    for way in ("inline", "workers"):
        folder = GraphFolder(tmp_path / way, "site")
        pages = []
        for n in range(PARALLEL_LINKS_MIN + 50):
            name = folder.claim(f"{SITE}p/{n}.html", SITE)
            body = (f"# Page {n}\n\nNext: [p]({SITE}p/{n + 1}.html#top), back [p]({SITE}p/{max(n - 1, 0)}.html).\n\n"
                    f"```\n[code]({SITE}p/{n}.html)\n```\n" if n % 7 else f"# Page {n}\n\nNo links.\n")
            folder.write_now(name, body)
            pages.append({"url": f"{SITE}p/{n}.html", "file": name, "sha256": ""})
        graphs[way] = folder, pages
    inline_folder, inline_pages = graphs["inline"]
    worker_folder, worker_pages = graphs["workers"]
    inline_total = inline_folder.link_pages(inline_pages, {}, {})
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("forkserver")) as executor:
        worker_total = worker_folder.link_pages(worker_pages, {}, {}, executor)
    assert inline_total == worker_total > 400
    assert inline_pages == worker_pages  # file names and recomputed sha256 of every changed page
    assert sum(1 for page in worker_pages if page["sha256"]) == PARALLEL_LINKS_MIN + 50 - 36  # pages with links
    for page in inline_pages:
        inline = (inline_folder.staging / page["file"]).read_text()
        assert inline == (worker_folder.staging / page["file"]).read_text()
    page_one = (worker_folder.staging / worker_pages[1]["file"]).read_text()
    assert "Next: [p](p-2.md#top), back [p](p-0.md)." in page_one
    assert f"[code]({SITE}p/1.html)" in page_one  # fenced code untouched


@functools.cache
def docs_markdown() -> list[tuple[str, str]]:
    """Every page of the Python docs, extracted: ``(url under SITE, markdown)``."""
    from skillgraph.extract import extract_html
    from tests.conftest import PYTHON_DOCS

    pages = []
    for path in sorted(PYTHON_DOCS.rglob("*.html")):
        url = SITE + path.relative_to(PYTHON_DOCS).as_posix()
        pages.append((url, extract_html(path.read_bytes(), url).markdown))
    return pages


HARD = (f"a [b]({SITE}guide/a.html) `[x]({SITE}guide/a.html)` ``[z](w) ` still code`` and [c](../index.html)\n\n"
        f"```\n[no]({SITE}guide/a.html)\n```\n> ```\n> [q]({SITE}guide/a.html)\n> ```\n"
        f"- item [l]({SITE}index.html#x)\n  ~~~\n  [m]({SITE}index.html)\n  ~~~\n"
        f"[end]({SITE}guide/a.html#y) ![img](pic.png) [open fence]({SITE})\n```\n[in code]({SITE})\n")


def test_spliced_at_noted_offsets_is_the_scanned_rewrite(tmp_path: Path) -> None:
    """The page workers note where prose links start; splicing there gives the scanner's rewrite, byte for byte."""
    from skillgraph.extract import extract_html
    from skillgraph.graph.links import link_offsets, rewrite_at
    from tests.conftest import PYTHON_DOCS

    samples = [(SITE + "guide/hard.html", HARD)]
    for rel in ("library/json.html", "library/functions.html", "reference/datamodel.html", "glossary.html"):
        url = SITE + rel
        samples.append((url, extract_html((PYTHON_DOCS / rel).read_bytes(), url).markdown))
    graph = LocalLinks([(url, f"{n}.md") for n, (url, _) in enumerate(samples)] +
                       [(SITE + "library/re.html", "re.md"), (SITE + "guide/a.html", "guide-a.md")],
                       aliases={SITE: SITE + "index.html"})
    rewritten = 0
    for url, markdown in samples:
        def target(dest: str, base: str = url) -> str | None:
            return graph.target(dest, base=base)

        scanned = rewrite_links(markdown, target)
        assert rewrite_at(markdown, link_offsets(markdown), target) == scanned, url
        rewritten += scanned[1]
    assert rewritten > 50


def test_a_file_that_changed_since_its_offsets_were_noted_is_scanned(tmp_path: Path) -> None:
    from skillgraph.graph.links import link_offsets, rewrite_files
    from skillgraph.items import sha256_text

    page = tmp_path / "hard.md"
    page.write_text("# Inserted above: every offset moved\n" + HARD)
    noted = link_offsets(HARD)
    [(file, sha, count)] = rewrite_files(tmp_path, [(SITE + "guide/hard.html", "hard.md", noted, sha256_text(HARD))],
                                         links())
    text = page.read_text()
    assert (file, sha) == ("hard.md", sha256_text(text))
    assert text == "# Inserted above: every offset moved\n" + rewrite_links(HARD, lambda d: links().target(
        d, base=SITE + "guide/hard.html"))[0]
    assert count >= 3


def test_link_offsets_fast_paths_find_what_the_two_passes_find() -> None:
    """No fence (no scan), no backtick (no code span), links beside code spans, a backtick in a destination."""
    from skillgraph.graph.links import _decode, _prose_links_two_passes, link_offsets, prose_runs
    from skillgraph.markdown import scan

    def two_passes(markdown: str) -> list[int]:
        found: list[int] = []
        for start, end in prose_runs(scan(markdown)):
            _prose_links_two_passes(markdown, start, end, found)
        return found

    samples = ["no link at all", "[a](x) and [b](y)\n", "[`json.dumps()`](j.html#d) `[c](z)` [d](w)\r\n`x`[e](v)",
               "[a](x`y) `b` [c](d`)`", "``[a](b)`` ` [c](d)\n` [e](f)", "[a](b)\n```\n[c](d)\n```\n`[e](f)`[g](h)",
               HARD, "~~~\n[a](b)\n", "[a](b)`\n`[c](d)"]
    for markdown in samples:
        expected = two_passes(markdown)
        assert list(_decode(link_offsets(markdown))) == expected, markdown
        assert link_offsets(markdown, scan(markdown)) == link_offsets(markdown)


def test_files_rewritten_in_place_are_the_plain_rewrite(tmp_path: Path) -> None:
    """rewrite_files (bytes read, hashes of the bytes, absolute targets memoised, files overwritten in place) gives
    the files, hashes and counts of the plain way: Path.read_text, links.target per link, a new file renamed over.

    Texts that shrink, grow (relative links made absolute), carry CRLF or lone CR line ends (read_text's universal
    newlines), stale offsets, no offsets, and every Python docs page extracted.
    """
    from functools import partial

    from skillgraph.files import write_atomic
    from skillgraph.graph.links import link_offsets, rewrite_at, rewrite_files
    from skillgraph.items import sha256_text

    samples = [(SITE + "guide/hard.html", HARD), (SITE + "guide/b.html", "[a](a.html) [up](../index.html)\n" * 3),
               (SITE + "guide/crlf.html", HARD.replace("\n", "\r\n")),
               (SITE + "guide/cr.html", HARD.replace("\n", "\r")),
               (SITE + "guide/none.html", "no link\n"), (SITE + "guide/stale.html", HARD)]
    samples += docs_markdown()
    files = [(url, f"{n}.md") for n, (url, _) in enumerate(samples)]
    graph = LocalLinks([*files, (SITE + "guide/a.html", "guide-a.md")],
                       aliases={SITE: SITE + "index.html"}, old_files={"old-a.md": SITE + "guide/a.html"})
    pages: list[tuple[str, str] | tuple[str, str, bytes, str]] = []
    for way in ("plain", "fast"):
        (tmp_path / way).mkdir()
    for n, (url, markdown) in enumerate(samples):
        for way in ("plain", "fast"):
            (tmp_path / way / f"{n}.md").write_bytes(markdown.encode())
        noted = link_offsets("moved " + markdown) if url.endswith("stale.html") else link_offsets(markdown)
        pages.append((url, f"{n}.md", noted, sha256_text(markdown)) if n % 5 else (url, f"{n}.md"))

    expected = []
    for page in pages:
        path = tmp_path / "plain" / page[1]
        text = path.read_text("utf-8")
        target = partial(graph.target, base=page[0])
        if len(page) == 4 and sha256_text(text) == page[3]:
            text, count = rewrite_at(text, page[2], target)
        else:
            text, count = rewrite_links(text, target)
        if count:
            write_atomic(path, text)
            expected.append((page[1], sha256_text(text), count))

    assert rewrite_files(tmp_path / "fast", pages, graph) == expected
    assert len(expected) > 400
    for page in pages:
        plain, fast = tmp_path / "plain" / page[1], tmp_path / "fast" / page[1]
        assert fast.read_bytes() == plain.read_bytes(), page[1]
        assert not fast.is_symlink() and fast.stat().st_mode & 0o777 == 0o644
    assert [p.name for p in (tmp_path / "fast").iterdir() if not p.name.endswith(".md")] == [], "no temp file left"


def test_link_offsets_are_the_two_passes_on_random_texts_and_every_python_docs_page() -> None:
    """markdown.CODE_SPAN finds the spans of the plain reading of a code span (whole texts and ranges of them), and the
    offsets noted are where the two passes of the scanned rewrite find links: 30,000 random texts made of what
    matters (backtick runs, link openers and closers, fences, line ends) and every Python docs page."""
    import random

    from skillgraph.graph.links import _decode, _prose_links_two_passes, link_offsets, prose_runs
    from skillgraph.markdown import CODE_SPAN, scan

    plain_code_span = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)")  # a run, the shortest text, a run as long

    def two_passes(markdown: str) -> list[int]:
        found: list[int] = []
        for start, end in prose_runs(scan(markdown)):
            _prose_links_two_passes(markdown, start, end, found)
        return found

    pieces = ["`", "``", "```", "~~~", "](", ")", "(", "[a", "](x)", "](#y)", "](u`v)", " ", "\n", "\r\n", "\r", "a",
              "b c", "\\", "> ", "- ", "    ", "é"]
    rng = random.Random(22)
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 40))) for _ in range(30_000)]
    texts += [markdown for _, markdown in docs_markdown()]
    for text in texts:
        start, end = sorted(rng.randint(0, len(text)) for _ in range(2))
        for pos, endpos in ((0, len(text)), (start, end)):
            assert [m.span() for m in CODE_SPAN.finditer(text, pos, endpos)] == \
                [m.span() for m in plain_code_span.finditer(text, pos, endpos)], (text, pos, endpos)
        assert list(_decode(link_offsets(text))) == two_passes(text), text
        assert link_offsets(text, scan(text)) == link_offsets(text)
