"""The one markdown block scanner (CommonMark 0.31 fences and headings), and every reader that asks it.

Each scanner case is ``(markdown, kinds, headings)``: ``kinds`` has one character per
line (``.`` text, ``[`` fence opening, ``c`` code, ``]`` fence closing, ``#`` heading)
and ``headings`` lists ``(level, title, depth)``. The answers were checked against
markdown-it-py's CommonMark parser (HTML blocks, indented code and link reference
definitions aside, which the scanner leaves out on purpose).
"""

from __future__ import annotations

import random
import re

import pytest

from skillgraph.extract import html_to_markdown
from skillgraph.graph.links import rewrite_links
from skillgraph.graph.llms import describe, markdown_title
from skillgraph.markdown import (
    CODE,
    FENCE_CLOSE,
    FENCE_OPEN,
    HEADING,
    TEXT,
    Fenced,
    Line,
    _scan,
    fenced_blocks,
    fenced_spans,
    headings,
    scan,
    split_lines,
)
from skillgraph.quality.page import Page, text_stats
from skillgraph.quality.structure import read_markdown
from skillgraph.store.chunk import parse_blocks
from skillgraph.store.mcp import section
from skillgraph.strategy.llms import parse_llms_txt, split_sections
from skillgraph.tiers import code_fences_kept
from tests.conftest import PYTHON_DOCS

MARK = {TEXT: ".", FENCE_OPEN: "[", CODE: "c", FENCE_CLOSE: "]", HEADING: "#"}

CASES = [
    # fenced code (§4.5)
    ("backtick", "```py\n# comment\n```\n# Title", "[c]#", [(1, "Title", 0)]),
    ("tilde", "~~~\n# comment\n~~~\n", "[c]", []),
    ("longer closing fence", "```\na\n`````\n# h", "[c]#", [(1, "h", 0)]),
    ("shorter fence does not close", "````\n```\n# no\n```\n````\n# h", "[ccc]#", [(1, "h", 0)]),
    ("other character does not close", "```\n~~~\n# no\n```", "[cc]", []),
    ("closing fence takes no info string", "```\n```js\n# no\n```", "[cc]", []),
    ("closing fence with trailing spaces", "```\nx\n```   \n# h", "[c]#", [(1, "h", 0)]),
    ("backtick in a backtick info string: not a fence", "```a`b\n# h", ".#", [(1, "h", 0)]),
    ("backtick in a tilde info string: a fence", "~~~ a`b\n# no\n~~~", "[c]", []),
    ("two backticks: not a fence", "``\n# h", ".#", [(1, "h", 0)]),
    ("3 spaces of indent: a fence", "   ```\n# no\n   ```", "[c]", []),
    ("4 spaces of indent: not a fence", "    ```\n# h", ".#", [(1, "h", 0)]),
    ("closing fence indented 4: code", "```\n    ```\n# no", "[cc", []),
    ("a tab is 4 columns: not a fence", "\t```\n# h", ".#", [(1, "h", 0)]),
    ("unclosed fence runs to the end", "```\n# a\n\n## b\n", "[ccc", []),
    ("fence interrupts a paragraph", "text\n```\n# no\n```", ".[c]", []),
    # ATX headings (§4.2)
    ("#hashtag and #5 are not headings", "#hashtag\n#5 bolt\n# ok", "..#", [(1, "ok", 0)]),
    ("closing #s dropped", "## Title ##\n# C#\n### ###\n#  spaced  #  \n# a \\#", "#####",
     [(2, "Title", 0), (1, "C#", 0), (3, "", 0), (1, "spaced", 0), (1, "a \\#", 0)]),
    ("seven #s: text", "####### seven\n###### six", ".#", [(6, "six", 0)]),
    ("heading indented 3, not 4", "   # three\n    # four", "#.", [(1, "three", 0)]),
    ("tab after #", "#\tTab", "#", [(1, "Tab", 0)]),
    ("empty heading", "#\n## ", "##", [(1, "", 0), (2, "", 0)]),
    # setext headings (§4.3)
    ("setext", "Title\n=====\n\nSub\nline\n---", ".#...#", [(1, "Title", 0), (2, "Sub line", 0)]),
    ("--- after a blank line is a break", "text\n\n---", "...", []),
    # block quotes (§5.1)
    ("fence in a quote", "> ```\n> [x](y)\n> # no\n> ```\nafter", "[cc].", []),
    ("quote ends, its fence with it", "> ```\n> code\n\n# h", "[c.#", [(1, "h", 0)]),
    ("heading in a quote", "> # Quoted\n>\n> text", "#..", [(1, "Quoted", 1)]),
    ("lazy line is no setext underline", "> foo\nbar\n===", "...", []),
    ("nested quotes", "> > ```\n> > # no\n> > ```", "[c]", []),
    # list items (§5.2)
    ("fence in a list item", "- item\n\n  ~~~~\n  # no\n  ```\n  ~~~~\n# h", "..[cc]#", [(1, "h", 0)]),
    ("fence on the marker line", "1. ```sh\n   # no\n   ```", "[c]", []),
    ("fence in a nested item, 4 spaces in", "- a\n  - b\n\n    ```\n    # no\n    ```", "...[c]", []),
    ("unindented line ends the item and its fence", "- ```\ncode\n```\n# no", "[.[c", []),
    ("heading in a list item", "- # Item\n\n  ## Sub", "#.#", [(1, "Item", 1), (2, "Sub", 1)]),
    ("empty item ends at a second blank line", "-\n\n  ```\n# no", "..[c", []),
    ("ordered item not at 1 does not interrupt a paragraph", "text\n2. ```\n# h", "..#", [(1, "h", 0)]),
    ("* * * is a break, not an item", "* * *\n```\n# no", ".[c", []),
    # line ends (§2.1)
    ("CRLF", "```\r\n# no\r\n```\r\n# Title #\r\n", "[c]#", [(1, "Title", 0)]),
    ("CR", "```\r# no\r```\r# h", "[c]#", [(1, "h", 0)]),
    ("form feed ends no line", "a\x0c```\n# h", ".#", [(1, "h", 0)]),
    ("byte order mark", "\ufeff# Title", "#", [(1, "Title", 0)]),
]


@pytest.mark.parametrize(("markdown", "kinds", "found"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_scanner(markdown: str, kinds: str, found: list[tuple[int, str, int]]) -> None:
    lines = list(scan(markdown))
    assert "".join(MARK[line.kind] for line in lines) == kinds
    assert "".join(line.text for line in lines) == markdown, "lossless"
    assert [(h.level, h.title, h.depth) for h in headings(markdown)] == found


def test_lines_as_given_and_fenced_blocks() -> None:
    text = "intro\n```py title=x\na\n```\n\n> ~~~~\n> b\n\ntail\n```\nopen"
    assert [line.kind for line in scan(text.split("\n"))] == [line.kind for line in scan(text)]
    assert fenced_blocks(text) == [Fenced(1, 4, "```", "py title=x", 0, True), Fenced(5, 7, "~~~~", "", 1, False),
                                   Fenced(9, 11, "```", "", 0, False)]
    spans = fenced_spans(text)
    assert [text[a:b] for a, b in spans] == ["```py title=x\na\n```\n", "> ~~~~\n> b\n", "```\nopen"]
    assert split_lines("a\r\nb\x85c\rd") == ["a\r\n", "b\x85c\r", "d"]
    assert [line.starts_section for line in scan("# a\n> # b\n- # c\nd\n---\n")] == [True, False, False, False, False]


# Every reader asks the scanner: a ```` block holding a ``` block, a "# comment" and a link.
DOC = ("# Title\n\n````md\n```\n# not a heading\n- [Inside](https://a.test/in)\n```\n````\n\n"
       "## Real\n\n- [Outside](https://a.test/out): a link in prose that is long enough to describe the page\n")


def test_llms_txt_parser_and_corpus_splitter() -> None:
    index = parse_llms_txt(DOC, "https://a.test/llms.txt")
    assert index.title == "Title" and [(link.name, link.section) for link in index.links] == [("Outside", "Real")]
    assert [s.title for s in split_sections(DOC)] == ["Title", "Real"]
    assert [s.title for s in split_sections("~~~\n# in\n```\n# still in\n~~~\n# Out\n")] == ["preamble", "Out"]
    assert [s.title for s in split_sections("```a`b\n# C#\n")] == ["preamble", "C#"], "```a`b opens no fence"


def test_link_rewriter() -> None:
    md = DOC + "```a`b\n[a](https://a.test/a)\n\n> ```\n> [q](https://a.test/in)\n\n[b](https://a.test/b)\n"
    text, count = rewrite_links(md, lambda d: "file.md")
    assert count == 3, "prose links rewritten: after the ```` block, the ```a`b line (no fence), the quote's end"
    assert "[Outside](file.md)" in text and "[a](file.md)" in text and "[b](file.md)" in text
    assert text.count("(https://a.test/in)") == 2, "code in the ```` block and in the quote is left alone"


def test_chunker_and_mcp_sections() -> None:
    blocks = parse_blocks(DOC)
    assert [b.kind for b in blocks] == ["heading", "code", "heading", "text"]
    assert len(blocks[1].lines) == 6 and blocks[1].closed
    nested = parse_blocks("- a\n  - b\n\n    ```\n    x\n\n    y\n    ```\n")
    assert [b.kind for b in nested] == ["text", "code"], "a fence in a nested item is one block, blank line and all"
    assert section(DOC, "not a heading") is None
    assert section(DOC, "Title") == DOC.strip()


def test_graph_llms_title_and_description() -> None:
    assert markdown_title("```\n# comment\n```\n# Page\n") == "Page"
    assert markdown_title("Page\n====\n") == "Page"
    assert describe("````\n```\nA long line of code that is not a description.\n````\nThe real description.") \
        == "The real description."


def test_quality_signals_and_structure_check() -> None:
    assert read_markdown(DOC).fences == 1 and read_markdown(DOC).headings == 2
    found = read_markdown("```\n```js\n# comment\n```\n")
    assert (found.fences, found.headings) == (1, 0), "```js does not close a fence"
    assert Page(None, DOC, "").headings == ["title", "real"]
    prose = "Open a block with ```js and close it with three backticks again, as CommonMark says it."
    links = " ".join(f"[l{i}](https://a.test/{i})" for i in range(20))
    assert text_stats(f"{prose}\n\n{links}\n").prose_chars == len(prose), "inline ``` opens no code"


def test_tier_fence_check() -> None:
    assert code_fences_kept("````\n```\n````\n", 1) == "", "``` inside ```` is code, not a fence"
    assert code_fences_kept("```\ncode\n~~~\n", 1) == "unbalanced code fences", "~~~ does not close ```"


def test_extractor_unquotes_an_admonition_holding_a_quoted_fence() -> None:
    html = ('<html><body><main><div class="admonition note"><p class="admonition-title">Note</p><blockquote>'
            "<ul><li><p>Run it:</p><pre>make all\nmake install</pre></li></ul></blockquote></div></main></body></html>")
    md = html_to_markdown(html, "https://a.test/p.html")
    assert md.startswith("**Note:**\n\n> - Run it:"), "the fence is seen in the quote: no second level of quoting"
    assert [(b.depth, b.closed) for b in fenced_blocks(md)] == [(2, True)]


#: Pieces of markdown that start, continue or almost start every construct the scanner reads.
PIECES = ["- ", "* ", "+ ", "1. ", "2) ", "10.", "> ", ">", " ", "  ", "    ", "\t", "#", "## ", "#x", "```", "~~~",
          "``", "`", "**", "***", "__", "_", "=", "==", "-", "--", "---", "- - -", "1", "x", "text", "[a](b)",
          " ##", " #x", "\n", "\n", "\n", "\n", "\r\n", "\r", "\ufeff", "\u00e9", "\x85", "\u2028"]


def test_fast_paths_read_random_markdown_as_the_full_reading() -> None:
    """The fast paths (top-level ATX headings; past containers: blank, paragraph and "- " item lines, ``**bold``,
    ``#x``) change no line."""
    rng = random.Random(22)
    for _ in range(30_000):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 40)))
        lines = split_lines(text)
        assert list(_scan(lines, True)) == list(_scan(lines, False)), repr(text)


@pytest.mark.skipif(not PYTHON_DOCS.is_dir(), reason="Debian's python3.11-doc is not installed")
def test_fast_paths_read_python_docs_markdown_as_the_full_reading() -> None:
    """Real extractor output: nested index lists, ``**``-led signatures, quotes, fences in list items."""
    pages = sorted(PYTHON_DOCS.rglob("*.html"))
    picked = [p for p in pages if p.name.startswith("genindex-") and p.stat().st_size < 200_000][:6] + pages[::25]
    for page in picked:
        lines = split_lines(html_to_markdown(page.read_text("utf-8"), "https://docs.example/" + page.name))
        assert list(_scan(lines, True)) == list(_scan(lines, False)), page.name


def test_split_lines_ends_lines_only_where_commonmark_does() -> None:
    odd = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
    rng = random.Random(5)
    alphabet = "ab\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\u00e9"
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))
        lines = split_lines(text)
        assert "".join(lines) == text
        assert lines == (re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+", text) if odd.search(text)
                         else text.splitlines(keepends=True)), repr(text)


def _fenced_blocks_line_by_line(lines: list[Line]) -> list[Fenced]:
    """The reading :func:`fenced_blocks` makes in C, line by line: an opening fence, its code, its closing fence."""
    blocks: list[Fenced] = []
    opened: Line | None = None
    start, n = 0, -1
    for n, line in enumerate(lines):
        if opened is not None and line.kind not in (CODE, FENCE_CLOSE):
            blocks.append(Fenced(start, n, opened.fence, opened.info, opened.depth, False))
            opened = None
        if line.kind == FENCE_OPEN:
            opened, start = line, n
        elif line.kind == FENCE_CLOSE and opened is not None:
            blocks.append(Fenced(start, n + 1, opened.fence, opened.info, opened.depth, True))
            opened = None
    if opened is not None:
        blocks.append(Fenced(start, n + 1, opened.fence, opened.info, opened.depth, False))
    return blocks


def test_fenced_blocks_as_read_line_by_line() -> None:
    rng = random.Random(9)
    pieces = ["```", "~~~", "````", "> ", "- ", "  ", "x", "# h", "\n", "\n", "\n"]
    for _ in range(20_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        lines = list(scan(text))
        assert fenced_blocks(text) == fenced_blocks(text, lines) == _fenced_blocks_line_by_line(lines), repr(text)
