"""The docs-grade extractor: one small page per generator family, plus the hard cases.

Each fixture in ``tests/fixtures/extract/`` carries the family's real chrome
(sidebars, on-page TOC, breadcrumbs, edit links, footers, permalink marks) around
a main content with code, admonitions and tables.  Chrome texts are written so
they can be searched for: none of them may reach the markdown.
"""

from __future__ import annotations

import re
from pathlib import Path

import lxml.etree
import lxml.html
import pytest
from scrapy.http import HtmlResponse

from skillgraph.extract import Extraction, extract_html, extract_response, extract_tree, html_to_markdown

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "extract"
PAGE = "https://docs.example.com/guide/page.html"

_CODE_BLOCK = re.compile(r"(?ms)^([ >]*(?:(?:[-*+]|\d+[.)]) +)*)(`{3,})[^\n]*\n.*?^[ >]*\2`*[ \t]*$")
_CODE_SPAN = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)")
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>|<!--")


def prose(md: str) -> str:
    """The markdown outside fenced blocks and code spans."""
    return _CODE_SPAN.sub("C", _CODE_BLOCK.sub("CODE", md))


def assert_output_rules(md: str) -> None:
    assert "¶" not in md
    assert not _TAG.search(prose(md)), _TAG.search(prose(md))
    assert "\n\n\n\n" not in prose(md)


def extract_fixture(name: str, url: str | None = PAGE) -> Extraction:
    return extract_html((FIXTURES / f"{name}.html").read_bytes(), url)


#: family -> (title, snippets that must appear, chrome texts that must not)
FAMILIES: dict[str, tuple[str, list[str], list[str]]] = {
    "sphinx": (
        "json — JSON encoder and decoder",
        ["# `json` — JSON encoder and decoder", "> **Warning:** Be cautious",
         "**`json.dumps(obj, *, skipkeys=False, **kw)`**", "```python\n>>> import json\n",
         "    # Let the base class raise the TypeError\n    return o < 3\n```", "| int \\| float | number |",
         "Changed in version 3.6: All optional", "[conversion table](#py-to-json-table)",
         "[`str`](https://docs.example.com/guide/stdtypes.html#str)"],
        ["Navigation", "Next Topic Mailbox", "Sidebar Table Entry", "Report a Bug", "Footer Foundation",
         "Local Contents Entry"],
    ),
    "mkdocs-material": (
        "Getting started",
        ["# Getting started", "```bash\npip install griffe\n```", "> **Pro tip:** Use a virtual environment.",
         "**Python**\n\n```python\nimport griffe\n```", "**Shell**\n\n```console\n$ griffe dump x\n```",
         "## Install", "> **Version note:** Requires Python 3.8"],
        ["Site Logo Text", "Primary Nav Home", "Secondary Toc Install", "Edit this page", "Last update",
         "Footer Next Page", "Made with Material"],
    ),
    "docusaurus": (
        "Configuration",
        ["# Configuration", "## Quick start\n", "**npm**\n\n```bash\nnpm install litedemo\n```",
         "**yarn**\n\n```bash\nyarn add litedemo\n```", "> **Warning:** Never commit your key.",
         "```ts\nconst client = create({ apiKey })\n  // indented <T> comment\n```"],
        ["Skip to main content", "Navbar Brand", "Sidebar Intro Link", "Breadcrumb Home", "On this page",
         "Edit this page", "Pagination Intro", "Desktop Toc", "LiteDemo Footer", "Copy", "\u200b"],
    ),
    "starlight": (
        "Installation",
        ["# Installation", "## Node.JS\n", "[command line](#command-line)",
         "2. Check your installation\n\n   ```sh\n   node -v\n       npx -v\n   ```",
         "**npm**\n\n```sh\nnpm i demo\n```", "**pnpm**\n\n```sh\npnpm add demo\n```",
         "> **Tip:** **npx can be slow**. Install locally."],
        ["Skip to content", "Header Site Title", "Sidebar Getting Started", "On this page", "Right Toc Node",
         "Section titled", "Terminal window", "Edit page", "Pagination Configuration", "Built with Starlight"],
    ),
    "vitepress": (
        "Routing",
        ["# Routing\n", "## File-Based Routing\n", "```js\nexport default {\n  srcDir: './src'\n}\n```",
         "> **TIP:** Pages map to `.md` files.", "| File | Route |\n| --- | --- |\n| `index.md` | `/` |",
         "| `a\\|b.md` | `/a\\|b` |"],
        ["Nav Title VitePress", "Sidebar What is VitePress", "Outline File-Based Routing", "Edit this page",
         "Pager Intro", "Footer.", "Copy Code", "\njs\n"],
    ),
    "mintlify": (
        "Quickstart",
        ["# Quickstart", "Start building in five minutes.", "## Setup", "```bash\nnpm install acme\n```",
         "> **Note:** Requires an API key."],
        ["Navbar Acme Logo", "Sidebar Quickstart", "Toc Setup Entry", "Was this page helpful",
         "Pagination Introduction", "Powered by Mintlify", "Navigate to header"],
    ),
    "gitbook": (
        "Authentication",
        ["# Authentication", "## Bearer tokens", "```bash\ncurl -H \"Authorization: Bearer $TOKEN\" \\\n"
         "  https://api.acme.test/v1/me\n```", "> **Warning:** Tokens expire after one hour."],
        ["Header Acme API Docs", "Ask or search", "Toc Sidebar Authentication", "Breadcrumb Guides",
         "Next Errors Link", "Was this helpful", "Footer Copyright"],
    ),
    "nextra": (
        "Themes",
        ["# Themes", "## Configure", "```js\nconst withNextra = require('nextra')\nmodule.exports = withNextra()\n```",
         "> Restart the dev server after changing it."],
        ["Nextra Nav Logo", "Sidebar Introduction Nextra", "Toc Configure Entry", "Breadcrumb Docs",
         "Prev Pagination Introduction", "Nextra Footer", "Copy"],
    ),
    "antora": (
        "Configure a Site",
        ["# Configure a Site", "## Site key", "```yaml\nsite:\n  title: Demo Docs\n  url: https://docs.example.org\n```",
         "> **Tip:** Set `url` to enable the sitemap.", "| Key | Type |\n| --- | --- |\n| title | String |"],
        ["Navbar Antora Brand", "Nav Menu Antora", "Nav Playbook Link", "Breadcrumb Antora", "Edit this Page",
         "Aside Toc Contents", "Pagination Playbook", "Antora default UI Footer"],
    ),
    "rustdoc": (
        "Struct std::vec::Vec",
        ["# Struct [std](https://docs.example.com/index.html)::", "```rust\npub struct Vec<T, A = Global>\nwhere\n",
         "```rust\nlet mut vec = Vec::new();\nvec.push(1);\nassert_eq!(vec.len(), 1);\n```", "## Examples\n",
         "### impl&lt;T>", "Constructs a new, empty `Vec<T>`."],
        ["Mobile Topbar Std", "Sidebar Crate std", "Sidebar Implementations", "Copy item path", "Source",
         "Expand description", "§"],
    ),
    "mdbook": (
        "Hello, World!",
        ["# Hello, World!\n", "```rust\nfn main() {\n    println!(\"Hello, world!\");\n}\n```",
         "> **Note**: This book assumes", "```console\n$ rustc main.rs\n$ ./main\n```"],
        ["Sidebar Getting Started", "Menu Title", "Print", "Prev Chapter", "Next Chapter", "(#hello-world)"],
    ),
    "javadoc": (
        "Class StringUtils",
        ["# Class StringUtils", "public final class StringUtils extends [Object]",
         "```\n{@code\n  String s = StringUtils.trim(\"  a  \");\n  if (a < b && c > d) { }\n}\n```",
         "## Method Summary", "Removes leading and trailing whitespace."],
        ["Top Nav Package", "Sub Nav Method", "Footer Demo Corp"],
    ),
    "mediawiki": (
        "Systemd",
        ["# Systemd\n", "**systemd** is a suite", "## Basic usage\n", "```\n$ systemctl list-units --type=service\n```",
         "```ini\n[Unit]\nDescription=Demo <service>\n```", "| Command | Effect |\n| --- | --- |\n| `start` |"],
        ["Indicator Badge", "Site Sub", "Jump to navigation", "Toc Basic usage entry", "[edit]", "Navbox Related",
         "Retrieved from", "Catlinks Daemons", "Panel Main page", "Footer Lastmod"],
    ),
    "generic": (
        "Widget API",
        ["# Widget API", "[the widget call](https://docs.example.com/v2/api/widget.html)", "[options](#options)",
         "[the spec](https://example.org/spec)", "a &lt;div> tag in prose, 2 \\* 3 \\* 4, a \\`tick\\`",
         "diagram of widgets", "- First option\n\n  ```json\n  {\"size\": 3}\n  ```\n- Second option\n  - nested item",
         "````\nplain ``` fence inside\n````"],
        ["Cookie Banner Text", "Accept", "Header Home Link", "Header Blog Link", "Left Sidebar Intro",
         "Was this helpful", "Footer Copyright"],
    ),
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_generator_family(family: str) -> None:
    title, present, absent = FAMILIES[family]
    result = extract_fixture(family)
    assert result.generator == (None if family == "generic" else family)
    assert result.title == title
    for snippet in present:
        assert snippet in result.markdown, f"{family}: missing {snippet!r}\n{result.markdown}"
    for chrome in absent:
        assert chrome not in result.markdown, f"{family}: chrome {chrome!r} leaked\n{result.markdown}"
    assert_output_rules(result.markdown)
    assert result.markdown.endswith("\n") and not result.markdown.endswith("\n\n")


#: Fixtures of pages no family rule knows, each with its own test below.
PAGES = {"table-layout"}


def test_every_fixture_family_is_covered() -> None:
    assert {p.stem for p in FIXTURES.glob("*.html")} == set(FAMILIES) | PAGES


def fenced_bodies(md: str, lang: str) -> list[str]:
    """The code of every ``lang`` fence, with its list/quote indentation taken off."""
    lines, bodies = md.split("\n"), []
    for i, line in enumerate(lines):
        if line.endswith("```" + lang):
            width = len(line) - len(lang) - 3
            end = next(j for j in range(i + 1, len(lines)) if lines[j][width:] == "```")
            bodies.append("\n".join(x[width:] if len(x) > width else "" for x in lines[i + 1 : end]))
    return bodies


def wrap(body: str, head: str = "") -> str:
    return f"<!DOCTYPE html><html><head><title></title>{head}</head><body><main>{body}</main></body></html>"


def test_code_at_depth_in_lists_tables_definitions_admonitions_and_tabs() -> None:
    code = "def f(x):\n    if x < 2:  # small\n        return '<b>'\n\n    return x"
    pre = "<pre><code class=\"language-python\">" + code.replace("<", "&lt;").replace(">", "&gt;") + "</code></pre>"
    html = wrap(
        f"<ol><li><p>step</p><ul><li>{pre}</li></ul></li></ol>"
        f"<table><tr><th>A</th><th>B</th></tr><tr><td>x</td><td>{pre}</td></tr></table>"
        '<dl><dt>term</dt><dd><div class="admonition note"><p class="admonition-title">Note</p>'
        f"{pre}</div></dd></dl>"
        f'<div role="tablist"><button role="tab" aria-controls="p1">Py</button></div>'
        f'<div role="tabpanel" id="p1" hidden>{pre}</div>'
    )
    md = extract_html(html).markdown
    bodies = fenced_bodies(md, "python")
    assert len(bodies) == 4, md
    assert all(body == code for body in bodies), bodies
    # An admonition holding code is not quoted: a quoted fence ("> ```") is lost on line-based readers.
    assert "**Py**" in md and "\n**Note:**\n" in md and "> **Note:**" not in md and "**B:**" in md
    assert_output_rules(md)


def test_fence_is_longer_than_any_backtick_run() -> None:
    md = extract_html(wrap("<pre>a ```` b\n```\n</pre>")).markdown
    assert md.startswith("`````\na ```` b\n```\n`````"), md


def test_pygments_line_numbers_and_highlight_tables_are_not_code() -> None:
    html = wrap(
        '<div class="highlight-python"><pre><span class="linenos">1</span>x = 1\n<span class="linenos">2</span>'
        "y = 2\n</pre></div>"
        '<table class="highlighttable"><tr><td class="linenos"><div class="linenodiv"><pre>1\n2</pre></div></td>'
        '<td class="code"><div class="highlight"><pre>a = 1\nb = 2\n</pre></div></td></tr></table>'
    )
    assert extract_html(html).markdown == "```python\nx = 1\ny = 2\n```\n\n```\na = 1\nb = 2\n```\n"


def test_a_column_of_line_numbers_beside_a_listing_is_not_code() -> None:
    """YARD's table.source_code and gtk-doc's table.listing_frame: the numbers in a cell of their own, in a <pre>
    (226 of 274 YARD pages and every gtk-doc example wrote them as a fence of their own)."""
    yard = wrap('<table class="source_code"><tr><td><pre class="lines">\n\n20\n21\n22</pre></td><td>'
                "<pre class=\"code\"># File 'lib/yard/globals.rb', line 20\n\ndef log\n  YARD::Logger.instance\nend"
                "</pre></td></tr></table>")
    result = extract_html(yard)
    assert result.markdown == ("```\n# File 'lib/yard/globals.rb', line 20\n\ndef log\n  YARD::Logger.instance\nend\n"
                               "```\n")
    assert result.structure.status == "pass", result.structure
    gtkdoc = wrap('<div class="informalexample"><table class="listing_frame" border="0" cellpadding="0"'
                  ' cellspacing="0"><tbody><tr><td class="listing_lines" align="right"><pre>1\n2</pre></td><td'
                  ' class="listing_code"><pre class="programlisting">gpointer p;\nint i;</pre></td></tr></tbody>'
                  "</table></div><table><tr><td><pre>1</pre></td><td>one</td></tr></table>")
    md = extract_html(gtkdoc).markdown
    assert md.startswith("```\ngpointer p;\nint i;\n```\n"), md


def test_tables_pipe_escaping_spans_and_complex_fallback() -> None:
    html = wrap(
        "<table><thead><tr><th>k</th><th>v</th><th>w</th></tr></thead>"
        "<tbody><tr><td>a|b</td><td colspan='2'><p>one</p><p>two</p></td></tr></tbody></table>"
        "<table><tr><th>n</th><th>d</th></tr><tr><td rowspan='2'>r</td><td>x</td></tr><tr><td>y</td></tr></table>"
        "<table><tr><td>outer<table><tr><td>inner</td></tr></table></td></tr></table>"
    )
    md = extract_html(html).markdown
    assert "| k | v | w |\n| --- | --- | --- |\n| a\\|b | one two |  |" in md
    assert "| n | d |\n| --- | --- |\n| r | x |\n| r | y |" in md, "a rowspan repeats its cell in each row"
    assert "outer" in md and "inner" in md and "| outer" not in md
    assert_output_rules(md)


def test_a_cell_that_opens_with_a_pipe_keeps_one_escape() -> None:
    """``<td>|</td>`` read ``| \\| |``: a backslash, then a cell delimiter (fpdoc's inheritance trees, operator and
    regex tables); a backslash of the text before a pipe stays a backslash (``r1\\|r2`` in a code span)."""
    md = extract_html(wrap("<table><tr><th>op</th><th>meaning</th></tr><tr><td>|</td><td>alternative</td></tr>"
                           "<tr><td>||</td><td>or</td></tr><tr><td><code>r1\\|r2</code></td><td>either</td></tr>"
                           "</table>")).markdown
    assert "| \\| | alternative |\n| \\|\\| | or |\n| `r1\\\\|r2` | either |" in md, md


def test_header_rows_merge_into_one_label_per_column() -> None:
    """Sphinx grid tables: a group header spanning columns over a row of sub-headers (c-api/typeobj.html)."""
    html = wrap(
        "<table><thead>"
        "<tr><th rowspan='2'>Slot</th><th rowspan='2'>Type</th><th colspan='2'>Info</th></tr>"
        "<tr><th>O</th><th>T</th></tr></thead>"
        "<tbody><tr><td>tp_name</td><td>const char *</td><td>X</td><td></td></tr>"
        "<tr><td>tp_code</td><td><pre>int x;</pre></td><td></td><td>X</td></tr></tbody></table>"
        "<table><tr><th>only</th><th>headers</th></tr><tr><th>a</th><th>b</th></tr></table>"
    )
    md = extract_html(html).markdown
    labels = "**Slot:** tp_name\n\n  **Type:** const char \\*\n\n  **Info / O:** X"
    assert labels in md, "two header rows make one label per column, the group label on each column it spans"
    assert "**Info / T:**\n\n  ```\n  int x;" not in md and "**Type:**\n\n  ```\n  int x;\n  ```" in md
    assert "| Slot" not in md and "O\n" not in md, "the sub-header row is a header, not a row of data"
    assert "| only | headers |\n| --- | --- |\n| a | b |" in md, "a table of header cells only keeps its rows"
    assert_output_rules(md)


def test_base_href_and_anchor_links() -> None:
    head = '<base href="https://cdn.example.net/docs/v3/">'
    html = wrap(
        '<p><a href="intro.html">rel</a> <a href="#sec">anchor</a> <a href="/root">root</a> '
        '<a href="https://docs.example.com/guide/page.html#frag">self</a> <a href="javascript:void(0)">js</a> '
        '<a href="#">top</a> <a href="mailto:a@b.c">mail</a> <a href="a b(c).html">odd</a></p>',
        head,
    )
    md = extract_html(html, PAGE).markdown
    assert "[rel](https://cdn.example.net/docs/v3/intro.html)" in md
    assert "[anchor](#sec)" in md, "an #anchor stays relative to the page, whatever <base> says"
    assert "[root](https://cdn.example.net/root)" in md
    assert "[self](#frag)" in md
    assert "js top" in md and "javascript" not in md
    assert "[mail](mailto:a@b.c)" in md
    assert "[odd](https://cdn.example.net/docs/v3/a%20b%28c%29.html)" in md
    no_url = extract_html(html).markdown
    assert "[rel](https://cdn.example.net/docs/v3/intro.html)" in no_url and "[anchor](#sec)" in no_url


def test_links_stay_relative_without_any_url() -> None:
    md = extract_html(wrap('<p><a href="../x.html#y">x</a></p>')).markdown
    assert md == "[x](../x.html#y)\n"


def test_headings_permalinks_and_levels() -> None:
    html = wrap(
        '<h1>Top<a class="headerlink" href="#top">¶</a></h1><h3 id="s">Sub <a href="#s">#</a></h3>'
        '<h4><a href="#own">Own anchor</a></h4><h2>C#</h2>'
    )
    assert extract_html(html).markdown == "# Top\n\n### Sub\n\n#### Own anchor\n\n## C#\n"


def test_a_headings_text_is_not_guarded_as_a_line_of_prose() -> None:
    """``# 5\\. Managing Packages`` read oddly in raw markdown: a heading's text is inline, never a list or a
    quote; a leading "#" keeps its escape (``# #`` is an empty heading)."""
    html = wrap("<h1>5. Managing Packages</h1><p>Text.</p><h2>5.1) New packages</h2><h3>- a -</h3><h3>&gt; b</h3>"
                "<h3># c</h3><h3>#</h3>")
    md = extract_html(html).markdown
    assert md == "# 5. Managing Packages\n\nText.\n\n## 5.1) New packages\n\n### - a -\n\n### > b\n\n" \
                 "### \\# c\n\n### \\#\n", md


def test_superscripts_and_subscripts_keep_their_numbers_apart() -> None:
    """X.org's ICCCM: ``2<sup>27</sup>`` ran together as ``227`` and ``2<sup>-27</sup>`` as ``2-27``. A term
    of its own is marked; ordinals, marks, footnote markers and a script after emphasis read as before."""
    md = html_to_markdown("<main><h1>T</h1><p>scaled by 2<sup>27</sup>, E = 2<sup>-27</sup>, M<sup>-1</sup>, "
                          "94<sup>N</sup>, H<sub>2</sub>O, x<sub>(i+1)</sub>, the 1<sup>st</sup>, Java<sup>TM</sup>, "
                          'a note<sup><a href="#f1">1</a></sup>, a <a href="#f2"><sup>2</sup></a>, <i>a</i><sub>1</sub>'
                          ", <sup>3</sup> alone.</p></main>", "http://h/a.html")
    assert md == ("# T\n\nscaled by 2^27, E = 2^-27, M^-1, 94^N, H_2O, x_(i+1), the 1st, JavaTM, a note[\\[1\\]](#f1), "
                  "a [\\[2\\]](#f2), *a*1, 3 alone.\n"), md


def test_text_set_monospace_by_its_style_is_inline_code() -> None:
    """HeVeA (LaTeX to HTML) writes ``\\texttt`` as ``<span style="font-family:monospace">``: 1,156 options and
    names of the Free Pascal guide read as prose. Glued to a word, or marks alone, it is LaTeX2HTML's
    typewriter quotes (``"</span>close<span>"``), written as text."""
    mono = '<span style="font-family:monospace">{}</span>'
    md = html_to_markdown(f"<main><h1>T</h1><p>The {mono.format('-Fu')} option, {mono.format('fpc hello')}, a "
                          f"{mono.format('*')} wildcard, a {mono.format('&quot;')}close{mono.format('&quot;')} event, "
                          '<span style="font-family:sans-serif">mingw32</span>.</p></main>', "http://h/a.html")
    assert md == '# T\n\nThe `-Fu` option, `fpc hello`, a \\* wildcard, a "close" event, mingw32.\n', md


def test_a_link_whose_text_has_an_unbalanced_bracket_stays_a_link() -> None:
    """Texinfo's index entry "] in entries", its letter bar's ``<b>[</b>``, rustdoc's ``[T; N]`` linked piece by
    piece: an unbalanced bracket ended the link text early and the link read as plain text."""
    md = html_to_markdown('<main><h1>T</h1><p><a href="e.html#x">] in entries</a>, <a href="#b"><b>[</b></a>, '
                          '<a href="a.html">[</a>T<a href="a.html">; N]</a>, <a href="c.html">[a] b</a></p></main>',
                          "http://h/i.html")
    assert md == ("# T\n\n[\\] in entries](http://h/e.html#x), [**\\[**](#b), [\\[](http://h/a.html)T"
                  "[; N\\]](http://h/a.html), [[a] b](http://h/c.html)\n"), md


def test_an_emphasis_that_markdown_could_not_close_is_written_unmarked() -> None:
    """rsyslog's ``<strong>Author:</strong>Luis``, zsh's ``<i>NO_</i>BAD_PATTERN``: a closing mark after
    punctuation and before a letter does not close in CommonMark, and the asterisks showed around text that
    said something else (an option's name cut in two)."""
    md = html_to_markdown("<main><h1>T</h1><p><strong>Author:</strong>Luis, <i>NO_</i>BAD_PATTERN, "
                          "<b>bold</b>text, <b>done.</b> Next, <em>x</em>.</p></main>", "http://h/a.html")
    assert md == "# T\n\nAuthor:Luis, NO_BAD_PATTERN, **bold**text, **done.** Next, *x*.\n", md


def test_a_footnote_marker_keeps_its_brackets() -> None:
    """Sphinx draws a footnote reference's brackets with CSS, texinfo raises its number (``<sup>8</sup>``):
    "architectures. [1](#id16) Any" read as the number one in the sentence (Debian Policy, MIT Scheme)."""
    md = html_to_markdown('<main><h1>T</h1><p>architectures.<a class="footnote-reference brackets" href="#id16">1'
                          '</a> Any, not.<a href="#FOOT8"><sup>8</sup></a> x<sup><a href="#f2">2</a></sup>, section '
                          '<a href="#s3">3</a>, <a class="footnote-reference" href="#id5">[4]</a></p></main>', None)
    assert md == ("# T\n\narchitectures.[\\[1\\]](#id16) Any, not.[\\[8\\]](#FOOT8) x[\\[2\\]](#f2), section "
                  "[3](#s3), [[4]](#id5)\n"), md


def test_a_less_than_sign_that_starts_no_tag_is_written_plain() -> None:
    """Escaped at the end of a piece (a link might follow with a letter), ``<`` read "Jourdin &lt;[mail](...)>"
    (rsyslog's authors), "List&lt;[Field](...)>" (Javadoc) and "**safe&lt;**" (MIT Scheme): with the paragraph
    whole, a ``<`` before a link, a mark or a space is no tag; before a letter it stays escaped, and code is code."""
    md = html_to_markdown('<main><h1>T</h1><p>Jourdin &lt;<a href="mailto:j@x.org">mail</a>&gt;, List&lt;<a '
                          'href="F.html">Field</a>&gt;, <b>flo:safe&lt;</b>, a&lt;b, <code>&amp;lt;x</code>, '
                          "x &lt; 1</p></main>", "http://h/a.html")
    assert md == ("# T\n\nJourdin <[mail](mailto:j@x.org)>, List<[Field](http://h/F.html)>, **flo:safe<**, a&lt;b, "
                  "`&lt;x`, x < 1\n"), md


def test_prose_escaping_and_block_markers() -> None:
    html = wrap("<p># not a heading</p><p>1. not a list</p><p>- nor this</p><p>a <x> b * c `d` [e]</p>"
                "<p>if a&lt;b and <code>x&lt;y</code></p>")
    md = extract_html(html).markdown
    assert "\\# not a heading" in md and "1\\. not a list" in md and "\\- nor this" in md
    assert "a b \\* c \\`d\\` [e]" in md  # the unknown <x> element is dropped, text stays
    assert "if a&lt;b and `x<y`" in md, "'<b' would read as a tag in prose; in code it stays verbatim"
    assert_output_rules(md)


def test_a_backslash_in_prose_is_read_as_written() -> None:
    """SWI-Prolog's operator table: ``\\=`` and ``=`` were the same markdown (a backslash before punctuation is
    an escape to a markdown reader); ``=\\=`` read as ``==``. Before a letter a backslash is literal as it is."""
    md = extract_html(wrap("<p>Not unifiable: \\= and equal: =\\= and a path C:\\dir\\ end</p>"
                           "<table><tr><th>op</th><th>meaning</th></tr><tr><td>\\=</td><td>not unifiable</td></tr>"
                           "<tr><td>=</td><td>unify</td></tr></table>")).markdown
    assert "Not unifiable: \\\\= and equal: =\\\\= and a path C:\\dir\\ end" in md
    assert "| \\\\= | not unifiable |" in md and "| \\= | unify |" in md  # a lone "=" is escaped (setext)


def test_a_space_set_in_code_type_keeps_the_words_apart() -> None:
    """Scribble's section numbers: ``<h4>15.1<tt>&nbsp;</tt>Paths</h4>`` read "15.1Paths"."""
    md = extract_html(wrap("<h4>15.1<tt>&nbsp;</tt><a name='x'></a>Paths</h4><p>The space character"
                           " &quot;<code> </code>&quot; ends a word.</p>")).markdown
    assert "#### 15.1 Paths" in md and 'The space character " " ends a word.' in md


def test_images_are_alt_text_and_emphasis_keeps_spaces() -> None:
    md = extract_html(wrap('<p><img src="a.png" alt="A chart"> shows <em> growth </em>and <strong>b</strong></p>'))
    assert md.markdown == "A chart shows *growth* and **b**\n"


def test_title_falls_back_to_cleaned_title_element() -> None:
    result = extract_html("<html><head><title>Intro — MyLib 2.0 documentation</title></head>"
                          "<body><main><p>Hello there.</p></main></body></html>")
    assert result.title == "Intro"
    assert result.markdown == "# Intro\n\nHello there.\n"


def test_empty_and_odd_documents() -> None:
    assert extract_html("") == Extraction(title="", markdown="", generator=None)
    assert extract_html(b"   ") == Extraction(title="", markdown="", generator=None)
    xhtml = ('<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>X</title>'
             "</head><body><main><p>caf\u00e9</p></main></body></html>")
    assert "café" in extract_html(xhtml).markdown
    latin = ("<html><head><meta charset='iso-8859-1'><title>L</title></head>"
             "<body><main><p>caf\xe9</p></main></body></html>")
    assert "café" in extract_html(latin.encode("latin-1")).markdown


def test_tree_is_not_mutated() -> None:
    for path in sorted(FIXTURES.glob("*.html")):
        root = lxml.html.document_fromstring(path.read_bytes())
        before = lxml.etree.tostring(root)
        extract_tree(root, PAGE)
        assert lxml.etree.tostring(root) == before, path.name


def test_extract_response_reuses_the_parsed_tree_and_its_url() -> None:
    body = (FIXTURES / "generic.html").read_bytes()
    response = HtmlResponse("https://docs.example.com/v2/widgets.html", body=body, encoding="utf-8")
    root = response.selector.root
    before = lxml.etree.tostring(root)
    result = extract_response(response)
    assert response.selector.root is root and lxml.etree.tostring(root) == before
    assert "[the widget call](https://docs.example.com/v2/api/widget.html)" in result.markdown
    links = response.css("a::attr(href)").getall()
    assert "api/widget.html" in links, "the spider still sees the page's own links afterwards"


def test_extract_tree_accepts_an_element_tree_and_html_to_markdown_matches() -> None:
    data = (FIXTURES / "sphinx.html").read_text()
    tree = lxml.html.parse(str(FIXTURES / "sphinx.html"))
    assert extract_tree(tree, None).markdown == html_to_markdown(data, None)  # type: ignore[arg-type]


def test_page_without_landmarks_goes_to_the_article_fallback() -> None:
    para = "This long paragraph explains how the widget system composes small parts into larger ones. " * 4
    html = ("<html><head><title>Blog post</title></head><body><div class='menu'><a href='/'>Home</a> "
            "<a href='/about'>About</a></div><div class='post'><h1>Composing widgets</h1>"
            f"<p>{para}</p><p>{para}</p><pre><code class='language-sh'>make widgets</code></pre></div></body></html>")
    result = extract_html(html)
    assert result.generator is None and result.title == "Composing widgets"
    assert "composes small parts" in result.markdown and "```" in result.markdown
    assert_output_rules(result.markdown)


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.html")), ids=lambda p: p.stem)
def test_fixture_output_is_deterministic(path: Path) -> None:
    data = path.read_bytes()
    assert extract_html(data, PAGE) == extract_html(data, PAGE)


SPHINX_THEMES = {
    "alabaster": '<div class="document"><div class="body" role="main">{c}</div></div>'
                 '<div class="sphinxsidebar" role="navigation">Sidebar chrome</div>',
    "rtd": '<nav class="wy-nav-side">Sidebar chrome</nav><div class="rst-content"><div role="navigation" '
           'aria-label="Page navigation"><ul class="wy-breadcrumbs"><li>Sidebar chrome</li></ul></div>'
           '<div role="main" class="document"><div itemprop="articleBody">{c}</div></div>'
           '<footer><div class="rst-footer-buttons">Sidebar chrome</div></footer></div>',
    "furo": '<aside class="sidebar-drawer">Sidebar chrome</aside><div class="main"><div class="content">'
            '<article role="main" id="furo-main-content">{c}</article><footer>Sidebar chrome</footer></div>'
            '<aside class="toc-drawer">Sidebar chrome</aside></div>',
    "pydata": '<div class="bd-sidebar-primary">Sidebar chrome</div><main id="main-content" class="bd-main" '
              'role="main"><div class="bd-header-article">Sidebar chrome</div><article class="bd-article" '
              'role="main">{c}</article><div class="bd-sidebar-secondary">Sidebar chrome</div></main>',
}


@pytest.mark.parametrize("theme", sorted(SPHINX_THEMES))
def test_sphinx_themes_pick_the_article(theme: str) -> None:
    content = ('<section id="s"><h1>Page<a class="headerlink" href="#s">#</a></h1><p>Body text.</p>'
               '<div class="highlight-default notranslate"><div class="highlight"><pre><span></span><span class="n">x'
               '</span> <span class="o">=</span> <span class="mi">1</span>\n</pre></div></div></section>')
    html = ('<html><head><script src="_static/documentation_options.js"></script><title>Page</title></head><body>'
            + SPHINX_THEMES[theme].format(c=content) + "</body></html>")
    result = extract_html(html)
    assert result.generator == "sphinx"
    # Sphinx's highlight-default is its default lexer, Python.
    assert result.markdown == "# Page\n\nBody text.\n\n```python\nx = 1\n```\n", theme


def test_a_sphinx_block_its_python_lexer_could_not_read_is_not_labelled_python() -> None:
    """rsyslog's ``$ModLoad imudp``, shell sessions, directory trees: ``highlight-default`` blocks that Pygments
    could not lex as Python are written without a token span, and were labelled ``python``."""
    def page(block: str, wrapper: str = "highlight-default") -> str:
        return ('<html><head><script src="_static/documentation_options.js"></script><title>P</title></head><body>'
                f'<div class="body" role="main"><section id="s"><h1>P</h1><div class="{wrapper} notranslate">'
                f'<div class="highlight"><pre><span></span>{block}\n</pre></div></div></section></div></body></html>')
    assert "```\n$ModLoad imudp\n```" in extract_html(page("$ModLoad imudp")).markdown
    lexed = '<span class="n">x</span> <span class="o">=</span> <span class="mi">1</span>'
    assert "```python\nx = 1\n```" in extract_html(page(lexed)).markdown
    assert "```bash\npip install flask\n```" in extract_html(page("pip install flask", "highlight-bash")).markdown, \
        "a shell lexer leaves plain words bare: its label stays"


def test_an_index_page_is_told_by_its_text_not_by_its_links_lengths() -> None:
    """SQLAlchemy's ``orm/relationships.html``, 391 characters: read from a file it kept its toctree, crawled from
    a server its absolute link destinations made it longer than an index page and its 8 links were lost."""
    names = ("basic", "self", "joins", "loading", "cascades", "backref")
    intro = "".join(f'<a href="{name}.html">{name}</a> ' for name in names)
    html = ('<html><head><script src="_static/documentation_options.js"></script><title>Relationships</title>'
            '</head><body><div role="main" class="body"><section id="r"><h1>Relationship Configuration</h1>'
            f"<p>This section describes the relationship() function and its parameters: {intro}</p>"
            '<div class="toctree-wrapper compound"><ul><li class="toctree-l1"><a href="basic.html">Basic Patterns'
            '</a></li><li class="toctree-l1"><a href="self.html">Adjacency Lists</a></li></ul></div></section>'
            "</div></body></html>")
    short = extract_html(html, "http://h/orm/relationships.html").markdown
    long = extract_html(html, "http://documentation.example.org/sqlalchemy/2.0/orm/relationships.html").markdown
    assert "- [Basic Patterns](http://h/orm/basic.html)\n- [Adjacency Lists](http://h/orm/self.html)" in short
    assert long == short.replace("http://h/", "http://documentation.example.org/sqlalchemy/2.0/")


def test_sphinx_index_page_keeps_its_toctree_first_level() -> None:
    """A page whose content is its toctree (``library/windows.html``) is not emptied."""
    page = Path("/usr/share/doc/python3.11/html/library/windows.html")
    if not page.exists():
        pytest.fail("python3.11-doc is not installed (.ci/run installs it)")
    markdown = extract_html(page.read_text(), "https://docs.python.org/3.11/library/windows.html").markdown
    assert "[`msvcrt`" in markdown and "(https://docs.python.org/3.11/library/msvcrt.html" in markdown
    assert markdown.count("\n- ") == 3, "one item per child page: msvcrt, winreg, winsound"
    assert "toctree-l2" not in markdown


def test_a_long_pages_toctrees_are_kept_in_place_with_their_caption() -> None:
    """The Developer's Reference's root: a title, a long licence, then the chapter list and an "Appendix" toctree.
    A page of more text than an index page dropped every toctree not right under a heading: its
    ``index.md`` ended after the licence. A toctree in the content is the author's list of pages; a
    caption opens its own block (the appendix's "1." is not the chapters' ninth item)."""
    licence = "<p>" + "This manual is free software; you may redistribute it under the GPL. " * 8 + "</p>"
    appendix = _toctree("tools").replace("<ul>", '<p class="caption" role="heading"><span class="caption-text">'
                                                 "Appendix</span></p><ul>", 1)
    html = ('<html><head><script src="_static/documentation_options.js"></script><title>Reference</title></head>'
            f'<body><div class="body" role="main"><section id="r"><h1>Reference</h1>{licence}'
            f'{_toctree("scope", "duties")}{appendix}</section></div></body></html>')
    markdown = extract_html(html, "https://docs.example.com/index.html").markdown
    assert markdown.endswith("- [Scope](https://docs.example.com/scope.html)\n"
                             "- [Duties](https://docs.example.com/duties.html)\n\n"
                             "Appendix\n\n- [Tools](https://docs.example.com/tools.html)\n"), markdown
    boxes = html.replace("</section>", '<div class="admonition seealso"><p>See also the FAQ.</p></div></section>')
    assert "- [Duties](https://docs.example.com/duties.html)\n\nAppendix\n\n- [Tools](" in \
        extract_html(boxes, "https://docs.example.com/index.html").markdown, \
        "rsyslog's sections end with the site's 'See also' boxes: the toctree before them is the section's too"


def _toctree(*pages: str) -> str:
    items = "".join(f'<li class="toctree-l1"><a class="reference internal" href="{p}.html">{p.title()}</a>'
                    f'<ul><li class="toctree-l2"><a href="{p}.html#s">Deep {p}</a></li></ul></li>' for p in pages)
    return f'<div class="toctree-wrapper compound"><ul>{items}</ul></div>'


def test_index_page_toctrees_stay_under_their_headings() -> None:
    """clang's index: a toctree under each section heading; each list is written where it stands."""
    body = (f'<section id="top"><h1>Docs</h1><p>Intro.</p>{_toctree("release")}'
            f'<section id="a"><h2>Using It</h2>{_toctree("manual", "faq")}</section>'
            f'<section id="b"><h2>As a Library</h2>{_toctree("tooling")}<p>The following are internals:</p>'
            f'{_toctree("ast")}</section>'
            '<section id="c"><h2>Indices</h2><ul class="simple"><li><p><a href="genindex.html">Index</a></p></li>'
            "</ul></section></section>")
    html = ('<html><head><script src="_static/documentation_options.js"></script><title>Docs</title></head><body>'
            f'<div class="body" role="main">{body}</div></body></html>')
    result = extract_html(html, "https://docs.example.com/index.html")
    assert result.generator == "sphinx"
    assert result.markdown == (
        "# Docs\n\nIntro.\n\n- [Release](https://docs.example.com/release.html)\n\n"
        "## Using It\n\n- [Manual](https://docs.example.com/manual.html)\n- [Faq](https://docs.example.com/faq.html)\n\n"
        "## As a Library\n\n- [Tooling](https://docs.example.com/tooling.html)\n\nThe following are internals:\n\n"
        "- [Ast](https://docs.example.com/ast.html)\n\n"
        "## Indices\n\n- [Index](https://docs.example.com/genindex.html)\n")


def test_index_page_tables_of_contents_stay_under_their_headings() -> None:
    """A DocBook part page with a ``div.toc`` under each heading: each in place, links to other pages only."""
    def toc(*pages: str) -> str:
        return ('<div class="toc"><p><b>Table of Contents</b></p><dl class="toc">'
                + "".join(f'<dt><a href="{p}.html">{p.title()}</a></dt>' for p in pages) + "</dl></div>")
    html = ("<html><body><div class='part'><h1>Part I</h1>" + toc("one", "two")
            + "<h2>Appendixes</h2>" + toc("three") + "<h2>See also</h2><p>The reference.</p></div></body></html>")
    assert html_to_markdown(html, "https://docs.example.com/part.html") == (
        "# Part I\n\n- [One](https://docs.example.com/one.html)\n- [Two](https://docs.example.com/two.html)\n\n"
        "## Appendixes\n\n- [Three](https://docs.example.com/three.html)\n\n## See also\n\nThe reference.\n")


def test_a_docbook_books_title_page_keeps_its_contents_whatever_its_length() -> None:
    """Valgrind's root (a licence, then the set's div.toc beside its title page), the Debian Reference's and
    Wireshark's (lists of figures): longer than an index page, they lost the book's contents."""
    licence = "<p>" + "Permission is granted to copy, distribute and modify this document. " * 8 + "</p>"
    toc = ('<div class="toc"><p><b>Table of Contents</b></p><dl class="toc"><dt><a href="QuickStart.html">Quick Start'
           '</a></dt><dt><a href="manual.html">User Manual</a></dt></dl></div>')
    html = (f'<html><body><div></div><div class="set"><div class="titlepage"><h1 class="title">Valgrind Documentation'
            f'</h1>{licence}</div><hr>{toc}</div></body></html>')
    md = html_to_markdown(html, "https://docs.example.com/index.html")
    assert md.endswith("- [Quick Start](https://docs.example.com/QuickStart.html)\n"
                       "- [User Manual](https://docs.example.com/manual.html)\n"), md
    chapter = html.replace('class="set"', 'class="chapter"')
    assert "[Quick Start]" not in html_to_markdown(chapter, "https://docs.example.com/ch01.html"), \
        "a long chapter's div.toc is its own contents box, as before"


def test_an_index_page_with_one_table_of_contents_and_no_heading_after_it_ends_with_it() -> None:
    """A DocBook chapter's toc precedes its introduction: under the same heading, the text comes first."""
    html = ("<html><body><div class='chapter'><h1 class='title'>Chapter 6. Data</h1><div class='toc'><dl class='toc'>"
            "<dt><a href='insert.html'>6.1. Inserting</a></dt></dl></div><p>This chapter fills tables.</p></div>"
            "</body></html>")
    assert html_to_markdown(html, "https://docs.example.com/dml.html") == (
        "# Chapter 6. Data\n\nThis chapter fills tables.\n\n- [6.1. Inserting](https://docs.example.com/insert.html)\n")


def test_clang_index_page_lists_each_sections_pages_under_its_heading() -> None:
    page = Path("/usr/share/doc/clang-14/html/index.html")
    if not page.exists():
        pytest.skip("clang-14-doc is not installed")
    markdown = extract_html(page.read_bytes(), "https://clang.llvm.org/docs/index.html").markdown
    library = markdown.index("# Using Clang as a Library")
    assert markdown.index("[Clang Compiler User’s Manual](https://clang.llvm.org/docs/UsersManual.html)") \
        < library < markdown.index("[LibTooling](https://clang.llvm.org/docs/LibTooling.html)") \
        < markdown.index("# Using Clang Tools")
    assert "\n\n# Using Clang as a Library\n\n- [Choosing the Right Interface" in markdown
    assert markdown.index("# Indices and tables") > markdown.index("[Constant Interpreter]")


def test_a_term_already_bold_is_not_wrapped_twice() -> None:
    # Texinfo writes option terms as <dt><b>...</b></dt>: one bold term, never "****".
    markdown = html_to_markdown("<main><h1>Options</h1><dl><dt><b>&ndash;dont-backup</b></dt><dd><p>No backup file."
                                "</p></dd><dt><b>&ndash;mode=<i>mode</i></b></dt><dd><p>The mode.</p></dd>"
                                "<dt>plain term</dt><dd><p>Text.</p></dd></dl></main>", "http://h/o.html")
    assert "**–dont-backup**" in markdown and "**–mode=*mode***" in markdown and "**plain term**" in markdown
    assert "****" not in markdown


def test_a_definition_with_a_bold_name_and_nested_emphasis_is_valid_commonmark() -> None:
    # Texinfo 7 (GNU MPFR, libgcrypt, m4): <dt><span>Function: </span><em>int</em> <strong>name</strong>
    # <em>(type <var>arg</var>)</em></dt>. Wrapping that term in bold, or <var> inside <em> in another *,
    # gave "**Function: *int* **name** *(type *arg*)***", which CommonMark closes in the wrong places.
    html = ("<main><h1>Assignment</h1><dl class='def'><dt id='index-set'><span class='category'>Function: </span>"
            "<span><em>int</em> <strong>mpfr_set</strong> <em>(mpfr_t <var>rop</var>, mpfr_t <var>op</var>)</em>"
            "</span></dt><dd><p>Set the value.</p></dd></dl>"
            "<p><em>An <i>inner</i> emphasis</em> and <b>a <strong>bold</strong> run</b>.</p>"
            "<dl><dt><code>void dump(xmlChar**mem)</code></dt><dd><p>A C pointer, not bold.</p></dd></dl></main>")
    markdown = html_to_markdown(html, "http://h/set.html")
    assert "Function: *int* **mpfr_set** *(mpfr_t rop, mpfr_t op)*" in markdown.splitlines()
    assert "*An inner emphasis*" in markdown and "**a bold run**" in markdown
    assert "**`void dump(xmlChar**mem)`**" in markdown, "a term whose code holds ** is still wrapped"
    assert "***" not in markdown.replace("**`void dump(xmlChar**mem)`**", "")


def test_emphasis_around_a_block_leaves_the_inner_emphasis_its_marks() -> None:
    # an outer <b> holding a block is not written (emphasis is inline); the <b> inside it still is
    markdown = html_to_markdown("<main><h1>T</h1><b><p>Para one.</p><p>A <b>key</b> word.</p></b></main>",
                                "http://h/b.html")
    assert "A **key** word." in markdown


# -- generators nobody tuned for (issue 24): old table layouts, pre-formatted blocks, data tables ----------


def test_a_table_laid_out_page_is_its_column_under_its_own_heading() -> None:
    """A hand-written manual laid out in nested tables: no logos, no menu column, no site banner."""
    result = extract_fixture("table-layout", "https://libfoo.example.org/xmlmem.html")
    md = result.markdown
    assert result.title == "Memory Handling", "the page's heading, which <title> says, not the site's <h1>"
    assert md.startswith("# Memory Handling\n\nThe module `foomem.h` holds"), md[:200]
    for chrome in ("The Foo C Toolkit Of The Desktop", "Logo", "Campaign Badge", "Developer Menu", "Menu Entry",
                   "Related links", "Mail Archive Link", "Bug Tracker Link"):
        assert chrome not in md, chrome
    assert "[Daniel Author](http://lists.example.org/)" in md, "a link in the content column stays"
    # <pre> holds code: fenced as shown, a <br> is a line break.
    assert "```\nint fooMemSetup(fooFreeFunc freeFunc,\n                fooMallocFunc mallocFunc," in md
    assert "```\nStructure fooMemStats\nstruct _fooMemStats {\n    size_t  allocated\t: bytes in use\n" in md
    # Data tables stay tables: a parameter list, and a table indented by <blockquote> (not quoted),
    # its cells of two paragraphs or of a short list on one line each.
    assert "| *`freeFunc`*: | the routine that frees |\n| --- | --- |\n| *`mallocFunc`*: |" in md
    assert ("| Setting | Default | Meaning |\n| --- | --- | --- |\n"
            "| FOO_MEM_MAX | 0 | No limit. Set it to cap the heap. |\n"
            "| FOO_MEM_DEBUG | 1 | counts blocks; checks frees |") in md
    assert "> |" not in md
    assert_output_rules(md)


@pytest.mark.parametrize(("title", "expected"), [
    ("Memory Handling", "Memory Handling"),  # the h1 is the site's: the heading after it is the page's
    ("The Foo C Toolkit Of The Desktop", "The Foo C Toolkit Of The Desktop"),  # the site's home page
    ("Toolkit Guide", "The Foo C Toolkit Of The Desktop"),  # nothing says which: the h1 stays the title
])
def test_a_site_banner_gives_way_only_when_the_title_names_the_next_heading(title: str, expected: str) -> None:
    html = (f"<html><head><title>{title}</title></head><body><h1>The Foo C Toolkit Of The Desktop</h1>"
            "<h2>Memory Handling</h2><p>Every allocation goes through one routine, which an application may"
            " replace with its own.</p></body></html>")
    result = extract_html(html)
    assert result.title == expected
    assert result.markdown.startswith(f"# {expected}\n")
    assert ("The Foo C Toolkit" in result.markdown) == (expected != "Memory Handling")


@pytest.mark.parametrize(("href", "title", "banner_kept"), [
    ("http://www.foo.example.org", "4. Building and installing Foo", False),  # the site's name, linked home
    ("index.html", "4. Building and installing Foo", False),
    ("#toc-1", "4. Building and installing Foo", True),  # linked to the contents: the page's own heading
    ("http://www.foo.example.org", "Foo Mailer: building", True),  # it says the title
])
def test_a_linked_site_name_above_the_column_opens_nothing(href: str, title: str, banner_kept: bool) -> None:
    """Exim's manual: every page opens with the site's name as an h1 linking home, then its menu and the chapter."""
    html = (f'<html><head><title>{title}</title></head><body><h1 id="header"><a href="{href}">Foo Mailer</a></h1>'
            '<div id="outer"><ul class="menu"><li><a href="/">Home</a></li><li><a href="/dl.html">Download</a></li>'
            '<li><a href="/docs.html">Documentation</a></li></ul><div id="inner"><div id="content">'
            '<a href="ch-3.html">&lt;-previous</a><a href="ch-5.html">next-&gt;</a><div id="chapter">'
            "<h2>Chapter 4 - Building and installing Foo</h2><p>Foo is distributed as a tar file which, when"
            " unpacked, creates a directory named after the release, holding the sources.</p>"
            "<pre>tar xf foo-4.96.tar.gz\ncd foo-4.96</pre><p>Compilation does not take place in the src directory:"
            " a build directory is made for each architecture and operating system.</p></div></div></div></div>"
            "</body></html>")
    md = extract_html(html, "http://foo.example.org/spec/ch-4.html").markdown
    assert ("Foo Mailer" in md) == banner_kept
    assert ("Download" in md) == banner_kept, "the menu between the banner and the chapter goes with it"
    assert ("previous" in md) == banner_kept
    assert "# Chapter 4 - Building and installing Foo\n\nFoo is distributed" in md
    assert "```\ntar xf foo-4.96.tar.gz\ncd foo-4.96\n```" in md
    if not banner_kept and title.startswith("4."):
        # the chapter's heading says the <title> (four of its five words): it opens the page, not a second title
        assert md.startswith("# Chapter 4 - Building and installing Foo\n\nFoo is distributed"), md[:120]


def test_an_h1_below_the_first_heading_is_a_section_not_the_page_title() -> None:
    """Doxygen: a group page's title block sits outside div.contents, whose detailed description holds
    the comment's own markdown headings, h1s under the page's "Classes" and "Detailed Description" h2s."""
    html = ('<html><head><title>libfoo: Slots</title></head><body><div class="header"><div class="headertitle">'
            '<div class="title">Slots<div class="ingroups"><a class="el" href="group__functors.html">Functors</a>'
            '</div></div></div></div><div class="contents"><p>Slots are type-safe representations of callbacks.'
            ' <a href="#details">More...</a></p><h2 class="groupheader">Classes</h2><p>A slot wraps a function'
            ' or a method and can be copied, stored and called later with the same arguments.</p>'
            '<h2 class="groupheader">Detailed Description</h2><h1>Creating Slots</h1><p>Use mem_fun() or'
            ' ptr_fun() to get a slot from a method or a function.</p><h1>Lambdas</h1><p>A lambda converts'
            ' to a slot too.</p></div></body></html>')
    result = extract_html(html)
    assert result.title == "Slots"
    assert result.markdown.startswith("# Slots\n\nSlots are type-safe"), result.markdown[:100]
    assert "## Detailed Description\n\n# Creating Slots\n\nUse mem_fun()" in result.markdown
    # a page that opens with its h1 keeps it as the title, whatever follows
    md = html_to_markdown("<html><head><title>Site</title></head><body><main><h1>Guide</h1><p>Intro text.</p>"
                          "<h2>Part</h2><h1>Appendix</h1><p>More.</p></main></body></html>", None)
    assert md.startswith("# Guide\n\nIntro text.")
    # a kicker heading right above the h1, nothing under it (gi-docgen's "Method"), leaves the h1 the title
    result = extract_html("<html><head><title>Foo.Layout.get_iter</title></head><body><section class='content'>"
                          "<header><h3>Method</h3><h1>Layout.get_iter</h1></header><p>Returns an iterator.</p>"
                          "<h4>Return value</h4><p>The new iterator.</p></section></body></html>")
    assert result.title == "Layout.get_iter"
    assert result.markdown.startswith("### Method\n\n# Layout.get_iter\n\nReturns")


def test_previous_and_next_buttons_under_the_page_are_chrome() -> None:
    """pydata-sphinx-theme 0.x (Groonga's manual): div.prev-next-area in main, each button a link holding paragraphs."""
    md = html_to_markdown('<html><body><main class="bd-content" role="main"><div><section id="cast"><h1>7.12. Cast'
                          '</h1><p>Values are cast to the column type on load.</p></section></div>'
                          "<div class='prev-next-area'><a class='left-prev' id='prev-link' href='scorer.html'"
                          " title='previous page'><div class='prev-next-info'><p class='prev-next-subtitle'>previous"
                          "</p><p class='prev-next-title'>7.11. Scorer</p></div></a><a class='right-next'"
                          " id='next-link' href='grn_expr.html' title='next page'><div class='prev-next-info'><p"
                          " class='prev-next-subtitle'>next</p><p class='prev-next-title'>7.13. grn_expr</p></div>"
                          "</a></div></main></body></html>", None)
    assert md == "# 7.12. Cast\n\nValues are cast to the column type on load.\n"


def test_a_pre_holding_layout_is_read_as_blocks() -> None:
    """A <pre> kept around tables and headings for its spacing is a page's structure, not a listing."""
    md = html_to_markdown("<main><h1>Report</h1><pre><h2>Totals</h2><table><tr><th>Item</th><th>Count</th></tr>"
                          "<tr><td>files</td><td>12</td></tr></table></pre>"
                          "<pre>for f in files:\n    count(f)</pre></main>", None)
    assert "## Totals\n\n| Item | Count |\n| --- | --- |\n| files | 12 |" in md
    assert "```\nfor f in files:\n    count(f)\n```" in md
    assert md.count("```") == 2


def test_a_popup_menu_inside_a_pre_is_neither_its_layout_nor_its_text() -> None:
    """HAProxy's manual: a Bootstrap dropdown (ul.dropdown-menu, hidden until clicked) on a keyword in a text block."""
    md = html_to_markdown('<main><h1>Configuration</h1><pre class="text">Assigns a directory used with &quot;'
                          '<span class="dropdown"><a class="dropdown-toggle" href="#">ca-file<span class="caret">'
                          '</span></a><ul class="dropdown-menu"><li class="dropdown-header">This keyword is available '
                          'in sections :</li><li><a href="#ca-file-bind">Bind options</a></li></ul></span>&quot;\n'
                          "directives.\n\n  Example:\n        ca-base /etc/ssl\n</pre>"
                          '<p>More <span class="dropdown"><a href="#">x</a><ul class="dropdown-menu"><li>'
                          "Menu entry</li></ul></span> text.</p></main>", None)
    assert ('```text\nAssigns a directory used with "ca-file"\ndirectives.\n\n  Example:\n'
            "        ca-base /etc/ssl\n```") in md
    assert "available in sections" not in md and "Menu entry" not in md and "- " not in md


def test_a_note_laid_out_around_an_icon_is_not_a_table() -> None:
    """DocBook XSL admonition graphics: an icon cell spanning the label and body rows."""
    md = html_to_markdown('<main><h1>Files</h1><p>Intro.</p><div class="tip"><table border="0" summary="Tip">'
                          '<tr><td rowspan="2"><img alt="[Tip]" src="images/tip.png"/></td><th align="left">Tip</th>'
                          '</tr><tr><td><p>Run <code>mount</code> with no arguments.</p></td></tr></table></div>'
                          "</main>", None)
    assert "> **Tip:** Run `mount` with no arguments." in md, md
    assert "[Tip]" not in md and "|" not in md and md.count("Tip") == 1


def test_docbook_notes_labelled_by_a_heading_are_admonitions() -> None:
    """DocBook XSL's ``div.note > h3.title`` (PostgreSQL, X.org), Apache's ``div.warning > h3``, Wireshark's icon
    table titled by its subject: each read as a "### Note" heading in the outline, its end unmarked. A
    ``div.note`` that does not open with its label is a plain container."""
    md = html_to_markdown('<main><h1>ALTER</h1><p>Intro.</p><div class="tip" style="margin-left: 0.5in"><h3 '
                          'class="title">Tip</h3><p>Adding a column is fast.</p></div><div class="warning"><h3>Warning'
                          '</h3><p>Secure your server first.</p></div><div class="warning"><table summary="Warning: '
                          'Secrets"><tr><td rowspan="2"><img alt="[Warning]" src="w.svg"></td><th>Don\'t send secrets'
                          "</th></tr><tr><td><p>The list is public.</p></td></tr></table></div>"
                          '<div class="note"><p>A note class on a plain box.</p></div></main>', None)
    assert md == ("# ALTER\n\nIntro.\n\n> **Tip:** Adding a column is fast.\n\n> **Warning:** Secure your server "
                  "first.\n\n> **Warning:** **Don't send secrets**\n>\n> The list is public.\n\n"
                  "A note class on a plain box.\n"), md
    page = extract_html("<html><body><div class='sect1'><h2>8.1. Numeric Types</h2><p>Intro.</p>"
                        + "".join(f"<div class='note'><h3 class='title'>Note</h3><p>Note {n}.</p></div>"
                                  for n in range(4))
                        + "<h3>8.1.1. Integers</h3><p>Text.</p></div></body></html>")
    assert page.structure.status == "pass", "the labels are not headings the markdown lost (PostgreSQL's notes)"


def test_docbook_literal_layout_keeps_its_lines_blank_lines_and_indentation() -> None:
    """Valgrind's READMEs and PostgreSQL's formulas are DocBook ``div.literallayout``: lines set with ``<br>``
    and ``&nbsp;``, the markup's own line ends mere spaces. Read as prose they lost their blank lines and
    indentation and escaped ``~~~~`` underlines; they are literal text, fenced as a browser shows them."""
    html = ("<html><body><div class='chapter'><h1>README</h1><p>Intro.</p><div class='literallayout'><p><br>\n"
            "Building&nbsp;it<br>\n~~~~~~~~~~~<br>\nRun it with<br>\n<br>\n&nbsp;&nbsp;VALGRIND_LIB=<code>~/grind"
            "</code>&nbsp;valgrind<br>\n<br>\nand   wait.<br>\n</p></div><p>After.</p></div></body></html>")
    result = extract_html(html)
    assert result.markdown == ("# README\n\nIntro.\n\n```\nBuilding it\n~~~~~~~~~~~\nRun it with\n\n"
                               "  VALGRIND_LIB=~/grind valgrind\n\nand wait.\n```\n\nAfter.\n"), result.markdown
    assert result.structure.status == "pass", result.structure


def test_member_lists_keep_their_headings_and_their_rows_a_table() -> None:
    """A table holding headings (Doxygen's memberdecls): headings stay headings, member rows a pipe table."""
    md = html_to_markdown('<main><h1>apop_name Struct Reference</h1><table class="memberdecls">'
                          '<tr class="heading"><td colspan="2"><h2>Data Fields</h2></td></tr>'
                          '<tr><td class="memItemLeft">char **&#160;</td><td class="memItemRight"><b>col</b></td></tr>'
                          '<tr class="separator"><td colspan="2">&#160;</td></tr>'
                          '<tr><td class="memItemLeft">int&#160;</td><td class="memItemRight"><b>colct</b></td></tr>'
                          '<tr><td class="mdescLeft">&#160;</td><td class="mdescRight">How many columns.</td></tr>'
                          "</table></main>", None)
    assert md == ("# apop_name Struct Reference\n\n## Data Fields\n\n|  |  |\n| --- | --- |\n"
                  "| char \\*\\* | **col** |\n| int | **colct** |\n|  | How many columns. |\n")


def test_columns_of_lists_are_not_squeezed_into_a_pipe_table() -> None:
    """Sphinx's genindex lays links out in columns of lists: each row stays a list item, its lists whole."""
    items = "".join(f'<li><a href="a.html#f{i}">f{i}()</a></li>' for i in range(12))
    md = html_to_markdown(f'<main><h1>Index</h1><table class="indextable"><tr><td><ul>{items}</ul></td>'
                          f"<td><ul>{items}</ul></td></tr><tr><td><ul>{items}</ul></td><td><ul>{items}</ul></td></tr>"
                          "</table></main>", None)
    assert "| --- |" not in md and "f11()" in md and "; " not in md


def test_a_long_ordered_list_keeps_its_code_a_fence() -> None:
    """Items 10 and up indent their content four spaces, where a fence is no longer read as one."""
    items = "".join(f"<li><pre>void f{i}(void);</pre><p>Does thing {i}.</p></li>" for i in range(1, 12))
    md = html_to_markdown(f"<main><h1>Members</h1><ol>{items}</ol></main>", None)
    assert "1.\n   ```\n   void f1(void);\n   ```\n\n   Does thing 1." in md
    assert "10.\n\n```\nvoid f10(void);\n```\n\nDoes thing 10." in md
    assert not re.search(r"^ {4,}```", md, re.M), "no fence indented four spaces or more"


def test_docutils_html5_footnotes_in_asides_are_the_page_s_text() -> None:
    """docutils 0.18+ (Sphinx 5+, the Python 3.11 docs) writes footnotes as aside.footnote: text, not a sidebar."""
    md = html_to_markdown('<main><h1>Options</h1><p>Values are parsed as lists<a class="footnote-reference brackets" '
                          'href="#opt-2" id="id3" role="doc-noteref"><span class="fn-bracket">[</span>3'
                          '<span class="fn-bracket">]</span></a>.</p><aside class="footnote-list brackets">'
                          '<aside class="footnote brackets" id="opt-2" role="note"><span class="label">'
                          '<span class="fn-bracket">[</span><a role="doc-backlink" href="#id3">3</a>'
                          '<span class="fn-bracket">]</span></span><p>Markers <strong>must</strong> dangle:</p>'
                          '<div class="highlight-ini notranslate"><div class="highlight"><pre><span></span>'
                          '<span class="k">[options.extras_require]</span>\npdf =\n  RXP\n</pre></div></div>'
                          "</aside></aside><aside>Sidebar chrome</aside></main>", None)
    assert "Markers **must** dangle:\n\n```ini\n[options.extras_require]\npdf =\n  RXP\n```" in md
    assert "Sidebar chrome" not in md


def test_an_address_signature_is_not_the_page_s_text() -> None:
    """``<address>`` is the contact of a page's author (LaTeX2HTML and texi2html sign every page, docutils' own
    pages end with their authors): the same line at the end of each page of a site, never its content."""
    md = html_to_markdown("<body><h1>Event types</h1><p>Each event carries its <code>data</code>.</p>"
                          "<pre>$event->type</pre><hr><address>David Megginson "
                          '<a href="mailto:dm@example.org">&lt;dm@example.org&gt;</a></address></body>', None)
    assert md.startswith("# Event types\n\nEach event carries its `data`.")
    assert "$event->type" in md
    assert "Megginson" not in md and "mailto" not in md


def test_an_image_whose_alt_text_is_its_own_path_leaves_no_line() -> None:
    """docutils gives an image without ``:alt:`` its URI for alt text (the Python docs' figures, setuptools'
    banner): that path is no description; a real alt text stays."""
    md = html_to_markdown('<main><h1>pathlib</h1><img alt="../_images/pathlib-inheritance.png" '
                          'src="../_images/pathlib-inheritance.png"/><p>Pure paths.</p>'
                          '<p><img alt="logo.SVG" src="static/logo.svg"/> and <img alt="Inheritance diagram" '
                          'src="x.png"/></p><p><a href="#d"><img alt="images/title.png" src="images/title.png"/>'
                          "</a></p></main>", None)
    assert "_images" not in md and "logo" not in md and "title.png" not in md
    assert "Pure paths." in md and "Inheritance diagram" in md
    # texinfo gives its path without the extension: MIT Scheme's "fig/log1p fig/expm1"
    texinfo = html_to_markdown('<main><h1>Numbers</h1><p>Plots: <img src="fig/log1p.png" alt="fig/log1p"> '
                               '<img src="../fig/expm1.png" alt="fig/expm1"> <img src="logo.png" alt="logo">'
                               "</p></main>", None)
    assert "fig/" not in texinfo and "Plots: logo" in texinfo, texinfo
    cell = html_to_markdown("<main><h1>Sheet</h1><table><tr><th>Markup</th><th>Example</th></tr><tr><td>Image</td>"
                            '<td><img alt="images/biohazard.png" src="images/biohazard.png"/></td></tr>'
                            "<tr><td>Figure</td><td>a caption</td></tr></table></main>", None)
    assert "images/biohazard.png" in cell  # all the cell holds: the cell's content


def test_a_footnote_s_label_leads_its_text() -> None:
    """docutils writes a footnote as its label, then its text's paragraphs: "[1] text", not "[1]" alone."""
    md = html_to_markdown('<main><h1>abc</h1><p>Virtual subclasses<a class="footnote-reference brackets" '
                          'href="#id2" id="id1">[1]</a>.</p><aside class="footnote-list brackets">'
                          '<aside class="footnote brackets" id="id2" role="note"><span class="label">'
                          '<span class="fn-bracket">[</span><a role="doc-backlink" href="#id1">1</a>'
                          '<span class="fn-bracket">]</span></span><p>C++ programmers should note this.</p>'
                          "<p>A second paragraph.</p></aside></aside><p>[x]</p><p>Not a label.</p></main>", None)
    assert "\n\n[1] C++ programmers should note this.\n\nA second paragraph." in md
    assert "[x]\n\nNot a label." in md  # a paragraph of its own is never joined


def test_space_at_the_edge_of_inline_code_shows_between_words() -> None:
    md = html_to_markdown("<main><h1>Obsolete</h1><table><tr><td><code>(obsolete) </code>QByteArray &amp;</td>"
                          "<td>append()</td></tr><tr><td>int</td><td>size()</td></tr></table></main>", None)
    assert "| `(obsolete)` QByteArray & | append() |" in md


def test_kind_memo_of_tag_and_class_keeps_every_rule() -> None:
    """The memo keyed by tag and class holds the tag's verdict too: a classed footer or script is still chrome."""
    from skillgraph.extract.classify import ADMONITION, SKIP, kind

    def el(html: str) -> lxml.etree._Element:
        page = lxml.etree.fromstring(f"<html><body><p>x</p>{html}</body></html>", lxml.etree.HTMLParser())
        return page.find("body")[1]

    assert kind(el('<footer class="x">a</footer>'), "footer") == SKIP
    assert kind(el('<script class="x"></script>'), "script") == SKIP
    assert kind(el("<aside>a</aside>"), "aside") == SKIP
    assert kind(el('<aside class="note">a</aside>'), "aside") == SKIP
    assert kind(el('<aside class="admonition">a</aside>'), "aside") == ADMONITION
    assert kind(el('<div class="admonition">a</div>'), "div") == ADMONITION
    assert kind(el('<aside class="footnote brackets" role="note">a</aside>'), "aside") == 0
    assert kind(el('<aside class="footnote-list brackets">a</aside>'), "aside") == 0
    assert kind(el('<div class="admonition" role="navigation">a</div>'), "div") == SKIP
    assert kind(el('<div class="admonition" id="x">a</div>'), "div") == ADMONITION


def test_list_helpers_fast_paths() -> None:
    """One-line items and non-list blocks take the short way, with the long way's answers."""
    from skillgraph.extract.blocks import indent_item, is_list_block

    assert [is_list_block(b) for b in ("- a", "-a", "12. b", "1) c", "x", "", "#", "².")] == \
        [True, False, True, False, False, False, False, True]
    assert indent_item("-", ["word"]) == "- word"
    assert indent_item("10.", ["```a``` b"]) == "10.\n    ```a``` b"
    assert indent_item("-", ["a\nb"]) == "- a\n  b"


def test_linker_caches_unresolvable_hrefs_and_keeps_page_anchors_relative() -> None:
    from skillgraph.extract.inline import Linker

    linker = Linker("https://d.example/lib/json.html", "https://d.example/lib/json.html#top")
    assert linker.target("javascript:void(0)") is None and linker.target("javascript:void(0)") is None
    assert linker.target("json.html#dumps") == "#dumps"
    assert linker.target("json.html") is None
    assert linker.target("os.html#a b") == "https://d.example/lib/os.html#a%20b"


def test_table_cell_block_test_short_cuts_prose() -> None:
    """A cell's block starting with a letter is prose; fences, quotes, tables, headings, math and lists are blocks."""
    from skillgraph.extract.tables import _is_block

    assert [_is_block(b) for b in ("word", "```a``` b", "```\nx\n```", "`x`", "> q", "| a |", "# h", "$$\nx\n$$",
                                   "- i", "1. i", "", "«x»")] == \
        [False, False, True, False, True, True, True, True, True, True, False, False]


def test_title_class_probe_reads_class_attributes_in_document_order() -> None:
    """The attribute-axis XPath finds what ``//*[contains(@class, 'title')]`` finds, in the same order."""
    from skillgraph.extract.title import _title_class

    page = lxml.etree.fromstring('<html class="subtitle"><body><div class="x"><h2 class="title">A</h2></div>'
                                 '<p class="titles">B</p><span class="untitled y">C</span><p>title</p></body></html>',
                                 lxml.etree.HTMLParser())
    assert [el.tag for el in _title_class(page)] == [el.tag for el in page.xpath("//*[contains(@class, 'title')]")] \
        == ["html", "h2", "p", "span"]


def test_code_walk_reads_childless_tokens_inline() -> None:
    """A listing with line elements (Sphinx viewcode's div blocks): tokens, nested spans, gutters and line breaks."""
    from skillgraph.extract.code import code_text

    pre = lxml.etree.fromstring('<pre><span></span><span class="kn">import</span> <span class="nn">os</span>\n'
                                '<div class="viewcode-block"><span class="k">def</span> '
                                '<span class="nf"><b>f</b></span><span class="linenos">12</span>():<br/>'
                                '    <span class="k">pass</span></div>\n'
                                '<button>copy</button>x = 1</pre>', lxml.etree.HTMLParser()).find(".//pre")
    assert code_text(pre) == "import os\ndef f():\n    pass\nx = 1"


def test_a_separator_drawn_by_css_keeps_the_words_apart() -> None:
    """gi-docgen's titles: ``Soup<span class="sep"></span>Session``, the mark being ``span.sep::after`` in CSS.

    Read as markup, the words ran together ("SoupSession", "PangoLayoutget_iter") in the title and the H1 of
    every type, method and function page; an empty separator span is a space. One with text of its own
    (a breadcrumb's "›") is text as before.
    """
    result = extract_html('<html><head><title>Soup.Session</title></head><body><section class="content">'
                          '<header><h3>Class</h3><h1 aria-label="Name"><a href="index.html">Soup</a><span'
                          ' class="sep" role="presentation"></span>Session</h1></header><p>A session sends'
                          ' messages.</p></section></body></html>', "https://docs.example/soup/class.Session.html")
    assert result.title == "Soup Session"
    assert "# [Soup](https://docs.example/soup/index.html) Session\n\nA session sends messages." in result.markdown
    method = extract_html('<html><body><main><h1><a href="index.html">Pango</a><span class="sep"></span><a'
                          ' href="class.Layout.html">Layout</a><span class="sep"></span>get_iter</h1><p>Returns an'
                          ' iterator.</p></main></body></html>')
    assert method.title == "Pango Layout get_iter"
    assert method.markdown.startswith("# [Pango](index.html) [Layout](class.Layout.html) get_iter\n\n")
    crumbs = extract_html('<html><body><main><h1>Guide<span class="sep">›</span>Install</h1><p>Steps to install'
                          ' the package.</p></main></body></html>')
    assert crumbs.title == "Guide›Install"


def test_a_term_and_its_classifier_stay_apart() -> None:
    """numpydoc's parameters (SciPy, pandas): ``<dt><strong>obs</strong><span class="classifier">ndarray</span>``, the
    colon being ``.classifier:before`` in CSS, read ``**obs**ndarray``; docutils' HTML4 writer spells the colon."""
    md = extract_html(wrap('<dl class="field-list"><dt class="field-odd">Parameters</dt><dd class="field-odd"><dl>'
                           '<dt><strong>obs</strong><span class="classifier">ndarray, optional</span></dt>'
                           "<dd><p>Observations.</p></dd></dl></dd></dl>"
                           '<dl><dt>Term <span class="classifier-delimiter">:</span> <span class="classifier">'
                           "classifier</span></dt><dd><p>Definition.</p></dd></dl>")).markdown
    assert "**obs** : ndarray, optional\n\nObservations." in md
    assert "**Term : classifier**\n\nDefinition." in md


def test_footnotes_written_after_the_content_element_are_kept() -> None:
    """texi2any puts a node's footnotes in div.footnote after its div.section: the marker was left dangling."""
    bar = ('<div class="header"><p>Previous: <a href="Cell-Arrays.html" rel="prev">Cell Arrays</a>, Up: <a'
           ' href="Data-Containers.html" rel="up">Data Containers</a> &nbsp; [<a href="index.html#SEC_Contents"'
           ' rel="contents">Contents</a>]</p></div>')
    more = 3 * ("<p>Comma separated lists can appear on both sides of an assignment, and structure arrays and cell"
                " arrays can be converted into comma separated lists, in place of explicit ones.</p>")
    md = extract_html(f'<html><body><div class="section" id="Lists">{bar}<hr><h3 class="section">6.4 Comma'
                      ' Separated Lists</h3><p>Comma separated lists <a id="DOCF2" href="#FOOT2"><sup>2</sup></a> are'
                      f' the basic argument type to all Octave functions, for input and return arguments.</p>{more}'
                      '</div><div class="footnote"><hr><h4 class="footnotes-heading">Footnotes</h4><h5><a id="FOOT2"'
                      f' href="#DOCF2">(2)</a></h5><p>Also called <em>cs-lists</em>.</p></div><hr>{bar}'
                      '</body></html>').markdown
    # the marker points at the footnote's heading, "(2)", by the slug a markdown viewer gives it
    assert md.startswith("### 6.4 Comma Separated Lists\n\nComma separated lists [\\[2\\]](#2) are the basic"), md
    assert md.endswith("#### Footnotes\n\n##### (2)\n\nAlso called *cs-lists*.\n"), md
    assert "Data Containers" not in md, "the bars above and below are navigation"


def test_a_doxygen_page_whose_sections_are_h1s_keeps_its_title_block() -> None:
    """A ``\\page`` (Eigen's tutorials, Doxygen's own "Getting started"): the title block sits outside div.contents,
    which opens with prose and then the page's sections as h1s; the first section was taken for the title."""
    result = extract_html('<html><head><title>Eigen: The Matrix class</title></head><body><div class="header">'
                          '<div class="headertitle"><div class="title">The Matrix class<div class="ingroups"><a'
                          ' class="el" href="group__Dense.html">Dense matrix manipulation</a></div></div></div></div>'
                          '<div class="contents"><p>In Eigen, all matrices and vectors are objects of the Matrix'
                          ' template class.</p><h1>The first three template parameters of Matrix</h1><p>The Matrix'
                          " class takes six template parameters.</p><h1>Coefficient accessors</h1><p>The primary"
                          " coefficient accessors are the overloaded parenthesis operators.</p></div></body></html>")
    assert result.title == "The Matrix class"
    assert result.markdown.startswith("# The Matrix class\n\nIn Eigen, all matrices and vectors are objects"), \
        result.markdown
    assert "\n\n# The first three template parameters of Matrix\n\nThe Matrix class takes" in result.markdown


def test_the_title_is_the_pages_own_words() -> None:
    """A page without an h1: its heading says the title by its section number or most of its words (SWI-Prolog's
    ``4.17 Input and output`` under ``<title>SWI-Prolog Reference Manual: Section 4.17``, Maxima's ``22.2 Functions
    and Variables for fft``), and a ``<title>`` that names the site first gives the part the file is named after
    (every Postfix man page was titled "Postfix manual")."""
    body = "<p>Prolog reads and writes terms and characters through streams, which are opened by name.</p>"
    result = extract_html(f"<html><head><title>SWI-Prolog 9.0.4 Reference Manual: Section 4.17</title></head><body>"
                          f"<h2>4.17 Input and output</h2>{body}</body></html>", "http://h/Manual/IO.html")
    assert result.markdown.startswith("# 4.17 Input and output\n\nProlog reads"), result.markdown
    result = extract_html("<html><head><title>Functions and Variables for fast Fourier transform (Maxima 5.46.0"
                          f" Manual)</title></head><body><h3>22.2 Functions and Variables for fft</h3>{body}"
                          "</body></html>", "http://h/maxima_108.html")
    assert result.markdown.startswith("# 22.2 Functions and Variables for fft\n\n"), result.markdown
    result = extract_html("<html><head><title> Postfix manual - qmqp-sink(1) </title></head><body><pre>"
                          "<b>NAME</b>\n       qmqp-sink - parallelized QMQP test server\n</pre></body></html>",
                          "http://h/postfix/qmqp-sink.1.html")
    assert result.title == "qmqp-sink(1)"
    result = extract_html(f"<html><head><title>Getting started - Postfix manual</title></head><body>{body}</body>"
                          "</html>", "http://h/postfix/getting-started.html")
    assert result.title == "Getting started"  # the site's name last, as usual
    result = extract_html(f"<html><head><title>NAME - SECTION 8</title></head><body><h2>Overview</h2>{body}</body>"
                          "</html>", "http://h/x.html")
    assert result.markdown.startswith("# NAME\n\n## Overview"), "a heading that says nothing of the title stays"


def test_scribble_listings_laid_out_as_tables_are_code() -> None:
    """Racket's manuals (Scribble): a listing is table.RktBlk, a row a line (an expression of several lines a table
    in its row), indented by no-break spaces; a definition is a table.RBoxed box with its kind in a corner label;
    a one-line example is a paragraph in blockquote.SCodeFlow. None had a <pre>, so none was fenced (0 of 1,147)."""
    hs = '<span class="hspace">&nbsp;&nbsp;</span>'
    html = wrap('<div class="navsettop"><span class="navleft"><a href="../index.html">top</a></span><span'
                ' class="navright"><a href="mpairs.html">next &rarr;</a></span></div>'
                '<h4>4.10<tt>&nbsp;</tt>Pairs and Lists</h4><p>A pair combines exactly two values.</p>'
                '<blockquote class="SVInsetFlow"><table cellspacing="0" cellpadding="0" class="boxed RBoxed"><tr>'
                '<td><blockquote class="SubFlow"><div class="RBackgroundLabel SIEHidden"><div'
                ' class="RBackgroundLabelInner"><p>procedure</p></div></div><p class="RForeground">'
                '<span class="RktPn">(</span><a href="#p">pair?</a>'
                '<span class="hspace">&nbsp;</span>v<span class="RktPn">)</span> &rarr; boolean?</p></blockquote>'
                f'</td></tr><tr><td>{hs}v : any/c</td></tr></table></blockquote>'
                '<blockquote class="SCodeFlow"><table class="RktBlk"><tr><td><table class="RktBlk"><tr><td>'
                f'<span class="stt">&gt; </span>(define int/c</td></tr><tr><td>{hs}{hs}(make-flat-contract))</td></tr>'
                '</table></td></tr><tr><td><span class="RktRes">#t</span></td></tr></table></blockquote>'
                '<p>Example:</p><blockquote class="SCodeFlow"><p><span class="RktPn">(</span>struct'
                '<span class="hspace">&nbsp;</span>posn<span class="hspace">&nbsp;</span>(x y))</p></blockquote>')
    result = extract_html(html)
    assert result.markdown == (
        "#### 4.10 Pairs and Lists\n\nA pair combines exactly two values.\n\n*procedure*\n\n"
        "```racket\n(pair? v) → boolean?\n  v : any/c\n```\n\n"
        "```racket\n> (define int/c\n    (make-flat-contract))\n#t\n```\n\nExample:\n\n```\n(struct posn (x y))\n```\n"
    ), result.markdown
    assert result.structure.status == "pass", result.structure


def test_pandocs_source_code_class_names_the_language() -> None:
    """Pandoc (R Markdown, Quarto, pkgdown) writes ``pre.sourceCode.r``: the token beside ``sourceCode`` is the
    language, known or not (``r``, ``md``, ``latex`` were bare fences; only ``html`` was known)."""
    md = extract_html(wrap('<div class="sourceCode" id="cb1"><pre class="sourceCode r"><code class="sourceCode r">'
                           '<span id="cb1-1">x <span class="ot">&lt;-</span> 1</span></code></pre></div>'
                           '<pre class="sourceCode"><code>plain</code></pre>')).markdown
    assert md == "```r\nx <- 1\n```\n\n```\nplain\n```\n", md


def test_a_notebook_cells_execution_count_is_not_code() -> None:
    """nbsphinx (pandas' Styler guide: 125 of them) puts ``[4]:`` in a <pre> of its own beside each cell's code."""
    md = extract_html(wrap('<div class="nbinput docutils container"><div class="prompt highlight-none notranslate">'
                           '<div class="highlight"><pre><span></span>[4]:\n</pre></div></div><div class="input_area'
                           ' highlight-ipython3 notranslate"><div class="highlight"><pre><span></span>df.style\n</pre>'
                           "</div></div></div>")).markdown
    assert md == "```ipython3\ndf.style\n```\n", md


def test_a_gapdoc_chapter_is_titled_by_its_own_half_of_the_title() -> None:
    """GAPDoc: ``<title>GAP (ref) - Chapter 4: The Programming Language</title>`` and no h1 titled 174 of 180 pages
    "GAP (ref)"; the half the first heading says is the page's. Its chapter bars and on-page contents are chrome."""
    html = ('<html><head><title>GAP (ref) - Chapter 4: The Programming Language</title></head><body>'
            '<div class="chlinktop"><span class="chlink1">Goto Chapter: </span><a href="chap0.html">Top</a>'
            ' <a href="chap1.html">1</a> <a href="chap2.html">2</a></div><div class="chlinkprevnexttop">&nbsp;'
            '<a href="chap0.html">[Top of Book]</a>&nbsp; <a href="chap3.html">[Previous Chapter]</a></div>'
            '<p id="mathjaxlink" class="pcenter"><a href="chap4_mj.html">[MathJax on]</a></p>'
            '<h3>4 <span class="Heading">The Programming Language</span></h3><div class="ChapSects"><a'
            ' href="chap4.html#X1">4.1 Language Overview</a></div><p>This chapter describes the GAP programming'
            " language, its statements and expressions, in enough detail to write functions.</p>"
            '<h4>4.1 <span class="Heading">Language Overview</span></h4><p>The language is interpreted.</p>'
            '<div class="chlinkbot"><span class="chlink1">Goto Chapter: </span><a href="chap0.html">Top</a></div>'
            "</body></html>")
    result = extract_html(html, "http://h/ref/chap4.html")
    assert result.title == "Chapter 4: The Programming Language"
    assert result.markdown.startswith("# 4 The Programming Language\n\nThis chapter describes"), result.markdown
    assert "Goto Chapter" not in result.markdown and "MathJax" not in result.markdown and "4.1 Language Overview]" \
        not in result.markdown


def test_of_hidden_variants_the_default_one_is_shown() -> None:
    """LibreOffice's help: each platform's text is a hidden variant a script shows one of; all hidden, a shortcut
    read "+F2" and Basic examples lost their code (135 of 139 pages with a switch)."""
    html = wrap('<table><tr><th>Shortcut keys</th><th>Effect</th></tr><tr><td><span class="switchinline"><span'
                ' hidden="true" id="MACx1" class="MAC">Command</span><span hidden="true" id="defaultx1">Ctrl</span>'
                "</span>+F2</td><td>Insert Fields</td></tr></table>"
                '<span class="switch"><span hidden="true" id="WINx2" class="WIN"><div class="bascode"><pre>aFile ='
                ' "C:\\\\data.txt"</pre></div></span><span hidden="true" id="defaultx2"><div class="bascode"><pre>'
                'aFile = "~/data.txt"</pre></div></span></span><p hidden>A hidden paragraph stays hidden.</p>')
    result = extract_html(html)
    assert "| Ctrl+F2 | Insert Fields |" in result.markdown
    assert '```\naFile = "~/data.txt"\n```' in result.markdown and "C:" not in result.markdown
    assert "hidden paragraph" not in result.markdown


def test_a_column_of_code_lines_is_a_listing() -> None:
    """fpdoc (Free Pascal's RTL reference, 189 of 300 pages): a declaration is a one-column table, a row a line, each
    cell a ``span.code``, indented by no-break spaces; it read as a pipe table whose header was the first line.
    A column of separate items in ``<code>`` (PostgreSQL's ``plpy`` functions) stays a table."""
    rows = ["<span class='kw'>function</span> ActivateClassGroup(", "&nbsp;&nbsp;AClass: TPersistentClass",
            "):TPersistentClass;"]
    html = wrap("<h2>Declaration</h2><table cellpadding='0' cellspacing='0'>"
                + "".join(f"<tr><td><p><tt><span class='code'>{row}</span></tt></p></td></tr>" for row in rows)
                + "</table><table><tr><td><code class='literal'>plpy.debug(msg)</code></td></tr><tr><td><code"
                " class='literal'>plpy.log(msg)</code></td></tr></table>")
    result = extract_html(html)
    assert "```\nfunction ActivateClassGroup(\n  AClass: TPersistentClass\n):TPersistentClass;\n```" in result.markdown
    assert "| `plpy.debug(msg)` |" in result.markdown
    assert result.structure.status == "pass", result.structure


def test_a_toctree_that_is_all_of_its_section_stays_in_place() -> None:
    """On a page of more text than an index page, a toctree standing alone under its heading is that section (the
    kernel's ``core-api/index.html``: "Low level entry and exit" was left an empty heading; the Python docs'
    ``c-api/concrete.html``), and one after the section's own text is its list of pages ("Core utilities": a
    sentence, then its pages; the sentence alone said nothing)."""
    intro = "<p>" + "This is the beginning of a manual for core kernel APIs, with much more to say. " * 6 + "</p>"
    html = ('<html><head><script src="_static/documentation_options.js"></script><title>Core API</title></head>'
            f'<body><div role="main" class="body"><section id="c"><h1>Core API Documentation</h1>{intro}'
            '<section id="u"><h2>Core utilities</h2><p>This section has general and core utilities.</p>'
            '<div class="toctree-wrapper compound"><ul><li class="toctree-l1"><a href="kernel-api.html">The Linux'
            ' Kernel API</a></li></ul></div></section><section id="l"><h2>Low level entry and exit</h2>'
            '<div class="toctree-wrapper compound"><ul><li class="toctree-l1"><a href="entry.html">Entry/exit'
            ' handling for exceptions</a></li></ul></div></section></section></div></body></html>')
    md = extract_html(html, "http://h/core-api/index.html").markdown
    assert "## Low level entry and exit\n\n- [Entry/exit handling for exceptions](http://h/core-api/entry.html)" in md
    assert "general and core utilities.\n\n- [The Linux Kernel API](http://h/core-api/kernel-api.html)" in md


def test_javadoc_17_summary_grids_are_tables_under_the_selected_tab() -> None:
    """Javadoc 17 lays summaries out as a CSS grid (div.summary-table, a cell a div): every cell was a paragraph
    of its own. Its tabs filter one panel: the panel took the last tab's label, "Deprecated Methods"."""
    tabs = "".join(f'<button id="t-tab{i}" role="tab" aria-selected="{str(i == 0).lower()}" aria-controls="t.tabpanel"'
                   f' class="table-tab">{name}</button>' for i, name in enumerate(["All Methods", "Static Methods",
                                                                                   "Deprecated Methods"]))
    cell = '<div class="{c} even-row-color">{t}</div>'
    html = wrap(f'<div id="t"><div class="table-tabs" role="tablist">{tabs}</div><div id="t.tabpanel" role="tabpanel">'
                '<div class="summary-table three-column-summary" aria-labelledby="t-tab0">'
                '<div class="table-header col-first">Modifier and Type</div><div class="table-header col-second">'
                'Method</div><div class="table-header col-last">Description</div>'
                + cell.format(c="col-first", t="<code>static String</code>")
                + cell.format(c="col-second", t='<code><a href="#trim">trim</a>(String s)</code>')
                + cell.format(c="col-last", t='<div class="block">Removes leading and trailing whitespace.</div>')
                + "</div></div></div>")
    md = extract_html(html).markdown
    assert md == ("**All Methods**\n\n| Modifier and Type | Method | Description |\n| --- | --- | --- |\n"
                  "| `static String` | `trim(String s)` | Removes leading and trailing whitespace. |\n"), md


def test_a_declaration_in_a_term_is_fenced() -> None:
    """Nim's docs: ``<dt><pre>MimeDB = object ...</pre></dt>``: written as a bold line, a type's fields ran together
    and 16,816 of 32,240 <pre> lines were outside fences (175 of 231 pages best-effort)."""
    md = extract_html(wrap('<dl class="item"><div id="MimeDB"><dt><pre><a href="#MimeDB"><span class="Identifier">'
                           'MimeDB</span></a> = <span class="Keyword">object</span>\n  mimes: OrderedTableRef[string,'
                           ' string]\n</pre></dt><dd>A database of MIME types.</dd></div></dl>')).markdown
    assert md.startswith("```\nMimeDB = object\n  mimes: OrderedTableRef[string, string]\n```\n\nA database"), md


def test_a_site_header_h1_that_says_the_sites_half_of_the_title_is_the_banner() -> None:
    """Tomcat's docs: ``<header>...<h1>Apache Tomcat 10</h1><div class="versionInfo">Version 10.1.60</div></header>``
    under ``<title>Apache Tomcat 10 (10.1.60) - SSL/TLS Configuration How-To``: 95 of 103 pages were titled by the
    site, with its version line. A page's own h1 naming the page first keeps its place (the Python docs)."""
    page = ('<html><head><title>Apache Tomcat 10 (10.1.60) - SSL/TLS Configuration How-To</title></head><body><div'
            ' id="wrapper"><header><div id="header"><div class="logo"><a href="/"><img alt="Tomcat Home" src="t.png">'
            '</a></div><h1>Apache Tomcat 10</h1><div class="versionInfo">Version 10.1.60, Sep 20 2026</div></div>'
            '</header><div id="middle"><div id="mainLeft"><nav><h2>Links</h2><ul><li><a href="index.html">Docs Home'
            '</a></li></ul></nav></div><div id="mainRight"><div id="content"><h2>SSL/TLS Configuration How-To</h2>'
            "<p>To install and configure SSL/TLS support on Tomcat you need a keystore and a connector.</p><p>Most"
            " of this page is about the connector's attributes and how each one is used.</p></div></div></div></div>"
            "</body></html>")
    result = extract_html(page, "http://h/ssl-howto.html")
    assert result.title == "SSL/TLS Configuration How-To"
    assert result.markdown.startswith("# SSL/TLS Configuration How-To\n\nTo install"), result.markdown
    assert "Version 10.1.60" not in result.markdown and "Apache Tomcat" not in result.markdown
    own = ('<html><head><title>What’s New in Python 2.6 — Python 3.11 documentation</title></head><body><main>'
           "<h1>What’s New in Python 2.6</h1><p>This article explains the new features in Python 2.6.</p>"
           "<h2>Python 3.0</h2><p>The development cycle for Python versions 2.6 and 3.0 was synchronized.</p>"
           "</main></body></html>")
    assert extract_html(own).title == "What’s New in Python 2.6"


def test_a_column_empty_in_every_row_is_not_written() -> None:
    """texinfo's @menu and @multitable pad with &nbsp; columns, gtk-doc's parameter tables end with an empty one,
    Sphinx's module index opens with one: each read as a column of nothing."""
    md = extract_html(wrap('<table class="menu" border="0"><tr><td><a href="#bar-lines">Bar lines</a></td><td>&nbsp;'
                           '&nbsp;</td><td></td></tr><tr><td><a href="#auto">Automatic bar lines</a></td><td>&nbsp;'
                           "</td><td></td></tr></table><table><tr><th>op</th><th></th><th>meaning</th></tr><tr><td>+"
                           "</td><td></td><td>add</td></tr></table>")).markdown
    assert "| [Bar lines](#bar-lines) |\n| --- |\n| [Automatic bar lines](#auto) |" in md, md
    assert "| op | meaning |\n| --- | --- |\n| \\+ | add |" in md  # a lone "+" is escaped (a list marker)


def test_scaladoc_writes_each_description_once_without_its_widgets() -> None:
    """Scaladoc 2: a member's ``p.shortcomment`` (first sentence) beside its ``div.fullcomment`` wrote every
    description twice; ``span.permalink`` left a "[Permalink](...)" line a member, ``#mbrsel`` its filter widget."""
    html = wrap('<div id="mbrsel"><div id="order"><span class="filtertype">Ordering</span><ol><li class="alpha in">'
                "Alphabetic</li></ol></div></div><h4 class='signature'><span class='name'>head</span>: A</h4>"
                '<span class="permalink"><a href="index.html#List@head" title="Permalink"><img src="permalink.png"'
                ' alt="Permalink"></a></span><p class="shortcomment cmt">Selects the first element.</p><div'
                ' class="fullcomment"><div class="comment cmt"><p>Selects the first element. Note: might return'
                " different results for different runs.</p></div></div>")
    md = extract_html(html).markdown
    assert md.count("Selects the first element") == 1, md
    assert "Permalink" not in md and "Ordering" not in md and "Alphabetic" not in md
