"""In-page links point at the heading a markdown viewer anchors (skillgraph.extract.anchors)."""

from __future__ import annotations

import re

from skillgraph.extract import extract_html
from skillgraph.extract.anchors import heading_slug, slugs


def test_heading_slugs_are_githubs() -> None:
    """Lower case, punctuation dropped, each space a hyphen, the text as it shows; a repeat takes -1, -2."""
    assert heading_slug("5.6.1. Source") == "561-source"
    assert heading_slug("[`json`](https://x/json.html) — JSON encoder and decoder") == "json--json-encoder-and-decoder"
    assert heading_slug("**Bold** \\*starred\\* &lt;tag&gt; C++_ids") == "bold-starred-tag-c_ids"
    assert slugs(["Notes", "Usage", "Notes", "Notes"]) == ["notes", "usage", "notes-1", "notes-2"]


def _links(markdown: str) -> list[str]:
    return re.findall(r"\]\(#([^)]+)\)", markdown)


def test_in_page_links_point_at_the_heading_their_id_names() -> None:
    """Debian Policy's labels before headings, Sphinx's section ids, texinfo's section after its nav bar, an API
    entry and an anchor in the text (under their section's heading), a section by its first heading, a title
    written above; a fragment the page does not hold and a link to another page keep theirs."""
    html = ('<html><head><title>Control files</title></head><body><div class="body" role="main">'
            '<section id="control-files"><p>See <a href="#s-f-source">Source</a>, <a href="#s-syntax">syntax</a>, '
            '<a href="#json.dumps">dumps</a>, <a href="#index-x">x</a>, <a href="#Tools">Tools</a>, '
            '<a href="#nowhere">nowhere</a>, <a href="other.html#s-f-source">there</a>, '
            '<a href="#control-files">top</a>.</p>'
            '<section id="syntax"><span id="s-syntax"></span><h2>5.1. Syntax</h2><p>Text.</p>'
            '<dl class="py function"><dt class="sig sig-object py" id="json.dumps"><span class="sig-name">dumps'
            '</span>()</dt><dd><p>Serialize.</p></dd></dl>'
            '<p>An <a id="index-x"></a>indexed word.</p></section>'
            '<section id="s2"><span id="s-f-source"></span><h3>5.6.1. Source</h3><p>More.</p></section>'
            '<div class="chapter" id="Tools"><div class="header"><p>Next: <a href="#syntax" rel="next">Syntax</a>'
            '</p></div><h2>8 Tools</h2><p>Tools text.</p></div>'
            '<section id="s3"><h2>5.1. Syntax</h2><p>Again.</p></section>'
            "</section></div></body></html>")
    md = extract_html(html, "https://docs.example/policy/ch-controlfields.html").markdown
    assert md.startswith("# Control files\n\nSee [Source](#561-source), [syntax](#51-syntax), "
                         "[dumps](#51-syntax), [x](#51-syntax), [Tools](#8-tools), [nowhere](#nowhere), "
                         "[there](https://docs.example/policy/other.html#s-f-source), [top](#51-syntax)."), md
    assert "## 5.1. Syntax" in md and md.count("## 5.1. Syntax") == 2


def test_links_to_a_section_are_left_alone_when_nothing_names_it() -> None:
    """No heading, no link rewritten: the markdown is the renderer's."""
    md = extract_html("<html><body><main><p>Go <a href='#x'>there</a>.</p><p id='x'>Here.</p></main></body></html>",
                      "https://docs.example/a.html").markdown
    assert _links(md) == ["x"]
