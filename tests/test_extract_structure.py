"""Structural rules of content selection that no generator owns.

Each page is written here, small, in the shape several generators share (a navigation
bar of arrows above a short chapter, an example indented by a one-row table, a listing
of ``<article>`` entries); the rules are structural, so none names a generator's class.
"""

from __future__ import annotations

import re

from skillgraph.extract import extract_html
from skillgraph.extract.api import parse
from skillgraph.extract.select import descend, masses

PROSE = "A paragraph of the real content with enough words to weigh something. " * 3


def test_a_short_page_around_its_navigation_bar_is_content_not_a_bar() -> None:
    """A short chapter page: bar, heading, one paragraph, a menu (texinfo); only the bar goes."""
    html = ("<html><head><title>Input Control (GNU M4 1.4.19 macro processor)</title></head><body>"
            "<div class='chapter'><div class='header'><p>Next: <a href='n.html' rel='next'>File inclusion</a>, "
            "Previous: <a href='p.html' rel='prev'>Debugging</a>, Up: <a href='index.html' rel='up'>GNU M4</a></p>"
            "</div><hr><h2>8 Input control</h2><p>This chapter describes builtin macros for the input.</p>"
            "<ul><li><a href='Dnl.html'>Deleting whitespace</a></li><li><a href='Cq.html'>Quotes</a></li></ul>"
            "</div></body></html>")
    md = extract_html(html).markdown
    assert md.startswith("# 8 Input control\n\nThis chapter describes builtin macros"), md
    assert "- [Deleting whitespace](Dnl.html)" in md
    assert "Previous" not in md and "File inclusion" not in md
    assert "---" not in md, "a rule at the edge of the content only separated the bar"
    assert "Input Control (GNU M4" not in md, "the page's heading says the title: no second H1 above it"


def test_an_arrow_bar_says_where_it_goes_in_rel_or_title() -> None:
    """``[ << ] [ >> ] [Top]``: no Next/Prev word in the text, the links' titles say it (texi2html)."""
    bar = ("<table><tr><td>[<a href='c16.html' title='Previous chapter'> &lt;&lt; </a>]</td>"
           "<td>[<a href='c18.html' title='Next chapter'> &gt;&gt; </a>]</td>"
           "<td>[<a href='toc.html' title='Cover (top) of document'>Top</a>]</td></tr></table>")
    html = (f"<html><body>{bar}<hr><h1><a href='toc.html#T1'>17. Concluding Remarks</a></h1><p>{PROSE}</p>"
            f"<pre>make install</pre>{bar}</body></html>")
    md = extract_html(html).markdown
    assert "<<" not in md and "&lt;" not in md and "Top]" not in md and "| --- |" not in md, md
    assert md.startswith("# [17. Concluding Remarks](toc.html#T1)") and "```\nmake install\n```" in md


def test_a_one_row_table_around_an_example_is_layout() -> None:
    """An empty cell indenting an example (texinfo, texi2html), a box around code: the blocks, unindented."""
    html = (f"<html><body><main><h1>Idiom</h1><p>{PROSE}</p><table><tr><td>&nbsp;</td><td>"
            "<pre class='example'>static bool initialized;\nstatic void init (void);</pre></td></tr></table>"
            "<p>After.</p></main></body></html>")
    md = extract_html(html).markdown
    assert "\n```\nstatic bool initialized;\nstatic void init (void);\n```\n" in md, md
    assert "- " not in md and "| " not in md


def test_a_one_cell_table_is_a_box_and_rule_rows_are_not_rows() -> None:
    """HeVeA boxes a table's caption in a one-cell table and draws rules as rows (``td.hrule``); texinfo boxes a
    cartouche and separates index letters with ``<td colspan=4><hr></td>``: a box is its blocks, a rule no row."""
    html = (f"<html><body><main><h1>Operations</h1><p>{PROSE}</p><div class='caption'><table><tr><td>Table 6.1: "
            "Basic operations</td></tr></table></div><table><tr><td class='hrule' colspan='2'></td></tr>"
            "<tr><td>Expression</td><td>Result</td></tr><tr><td colspan='2'><hr></td></tr>"
            "<tr><td>-E</td><td>negation</td></tr><tr><td class='hrule' colspan='2'></td></tr></table>"
            "<table class='cartouche'><tr><td><dl><dt><b>Description</b></dt><dd><p>An extensive list library."
            "</p></dd></dl></td></tr></table></main></body></html>")
    md = extract_html(html).markdown
    assert "\n\nTable 6.1: Basic operations\n\n| Expression | Result |\n| --- | --- |\n| -E | negation |\n\n" in md, md
    assert "**Description**" in md and "| **Description**" not in md and "|  |" not in md, md


def test_a_heading_that_links_to_the_contents_still_holds_the_column() -> None:
    """The scorer never steps past a title, even one whose text is a link (texi2html, docutils)."""
    code = "<pre>" + "\n".join(f"line {i} of a long example" for i in range(60)) + "</pre>"
    html = (f"<html><body><h1><a href='toc.html#T4'>4. Preparing Sources</a></h1><p>{PROSE}</p>"
            f"<table><tr><td>&nbsp;</td><td>{code}</td></tr></table></body></html>")
    root = parse(html)
    assert root is not None
    body = root.find("body")
    assert descend(body, masses(body)) is body
    result = extract_html(html)
    assert result.reextracted is None and result.markdown.startswith("# [4. Preparing Sources]")


def test_prose_before_the_column_is_part_of_the_page() -> None:
    """A module header and description before the documented items (Haddock): kept with them."""
    items = "".join(f"<div class='top'><p class='src'>fun{i} :: Int</p><div class='doc'><p>{PROSE}</p></div></div>"
                    for i in range(12))
    html = ("<html><body><div id='content'><div id='module-header'><table class='info'>"
            "<tr><th>Copyright</th><td>(c) The University of Glasgow 2001, and its contributors</td></tr>"
            "<tr><th>License</th><td>BSD-style (see the file libraries/base/LICENSE in the sources)</td></tr>"
            "<tr><th>Maintainer</th><td>libraries@example.org, the maintainers of the base library</td></tr>"
            f"</table></div><div id='interface'><h1>Documentation</h1>{items}</div></div></body></html>")
    md = extract_html(html).markdown
    assert "| Copyright | (c) The University of Glasgow 2001, and its contributors |" in md
    assert "fun11 :: Int" in md


def test_one_article_of_several_is_not_the_page() -> None:
    """A page listing ``<article>`` entries (Erlang's functions, a blog index) is not its first entry."""
    entries = "".join(f"<article class='func'><h3>f{i}/1</h3><p>{PROSE}</p></article>" for i in range(6))
    html = f"<html><body><div id='content'><h1>lists</h1><p>{PROSE}</p>{entries}</div></body></html>"
    result = extract_html(html)
    assert result.reextracted is None
    assert result.markdown.startswith("# lists") and all(f"### f{i}/1" in result.markdown for i in range(6))
    single = f"<html><body><div>Menu</div><article><h1>Post</h1><p>{PROSE}</p></article></body></html>"
    assert extract_html(single).markdown.startswith("# Post") and "Menu" not in extract_html(single).markdown


def test_a_sidebar_of_the_whole_site_is_never_weighed() -> None:
    """Chrome subtrees are not entered: the scores cover the content only."""
    side = "<aside id='leftnav'><ul>" + "".join(f"<li><a href='m{i}.html'>m{i}</a></li>" for i in range(500))
    html = f"<html><body>{side}</ul></aside><div id='content'><h1>Module</h1><p>{PROSE}</p></div></body></html>"
    root = parse(html)
    assert root is not None
    scores = masses(root.find("body"))
    assert len(scores.figures) < 10
    assert re.match(r"# Module\n\nA paragraph", extract_html(html).markdown)


def test_a_title_bar_repeating_the_heading_gives_one_heading() -> None:
    """A fixed title bar above the content says the page's h1 again (Erlang): one ``# lists``."""
    html = (f"<html><body><div id='container'><div class='topbar'><div class='topbar-title'><h1>lists</h1></div>"
            f"</div><div id='content'><div><center><h1>lists</h1></center></div><h3>Module</h3><p>{PROSE}</p>"
            "</div></div></body></html>")
    md = extract_html(html).markdown
    assert md.startswith("# lists\n\n### Module\n\n") and md.count("# lists") == 1, md


def test_a_code_listing_that_is_the_whole_page_is_fenced_not_descended_into() -> None:
    """A source page: title, one line, a Doxygen fragment holding the mass; the fence is kept."""
    lines = "".join(f"<div class='line'><span class='lineno'>{i}</span>#define M{i}(x) ((x) + {i})</div>"
                    for i in range(40))
    html = (f"<html><body><div class='header'><div class='title'>define.h</div></div><div class='contents'>"
            f"<div class='fragment'>{lines}</div></div></body></html>")
    result = extract_html(html)
    assert result.reextracted is None
    assert "```\n#define M0(x) ((x) + 0)\n#define M1(x) ((x) + 1)\n" in result.markdown


def test_a_less_than_sign_before_a_link_is_escaped() -> None:
    """``Computable&lt;<a>I</a>,<a>O</a>&gt;`` (Javadoc): never ``<I,O>`` in prose, which reads as a tag."""
    html = ("<html><body><main><p>public Memoizer(<a href='C.html'>Computable</a>&lt;<a href='M.html'>I</a>,"
            "<a href='M.html'>O</a>&gt; computable)</p></main></body></html>")
    md = extract_html(html, "https://example.org/api/M.html").markdown
    assert "[Computable](https://example.org/api/C.html)&lt;I,O> computable" in md and "<I" not in md, md
