"""Docs containers: admonitions, tabs, definition lists and API signatures, math.

Each generator spells these differently (Sphinx ``div.admonition``,
Docusaurus ``theme-admonition``, Starlight ``aside``, Antora tables, MkDocs
``details``); they all become one markdown shape: a blockquote led by a bold
label, a bold tab label before each tab panel, a bold code span for an API
signature followed by its description.
"""

from __future__ import annotations

from lxml import etree

from skillgraph.extract import tables
from skillgraph.extract.blocks import Out, Walker, is_list_block, quote_lines
from skillgraph.extract.classify import (
    ADMONITION,
    ADMONITION_TOKENS,
    CLASSIFIER,
    CODE,
    GRID,
    KINDS,
    LAYOUT,
    MONOSPACE,
    SEPARATOR,
    SIGNATURE,
    SKIP,
    TABLIST,
    TABPANEL,
    TABSET,
    box_title,
    kind,
    opens_with_label,
)
from skillgraph.extract.code import code_block
from skillgraph.extract.inline import code_span, escape, plain_text, text_of
from skillgraph.markdown import CODE_SPAN, fenced_blocks

_find_tex = etree.XPath("descendant::annotation[@encoding='application/x-tex']")
_find_tabs = etree.XPath("descendant-or-self::*[@role='tab']")


def special(r: Walker, el: etree._Element, tag: str, flags: int, out: Out) -> None:
    """Render an element whose class or role (``flags``, from :func:`kind`) says more than its tag."""
    if flags & CODE and next(el.iter("pre"), None) is None:
        out.flush()
        block = code_block(el)
        if block:
            out.blocks.append(block)
    elif flags & TABLIST:
        remember_tabs(r, el)
    elif flags & ADMONITION:
        admonition(r, el, out)
    elif flags & TABSET:
        tabset(r, el, out)
    elif flags & SIGNATURE:
        if tag == "dl":
            deflist(r, el, out, api=True)
        else:
            signature(el, out)
    elif flags & LAYOUT:
        r.block(el, out)
    elif flags & TABPANEL:
        out.flush()
        label = tab_label(r, el)
        if label:
            out.blocks.append(f"**{escape(label)}**")
        r.walk(el, out)
        out.flush()
    elif flags & CODE:
        r.block(el, out)  # a code wrapper around a <pre>: the <pre> is the block
    elif flags & SEPARATOR and not len(el) and not (el.text or "").strip():
        out.inline.append(" ")  # its mark is CSS: the words either side stay apart
    elif flags & GRID:
        tables.grid(r, el, out)
    elif flags & MONOSPACE:
        before = out.inline[-1][-1:] if out.inline else ""
        after = (el.tail or "")[:1]
        if before.isalnum() or after.isalnum() or not any(map(str.isalnum, text_of(el))):
            r.element(el, out)  # glued to a word, or marks alone: LaTeX2HTML's typewriter quotes and carets
        else:
            r.code(el, out)
    elif flags & CLASSIFIER:
        before = el.getprevious()
        if before is None or "classifier-delimiter" not in (before.get("class") or ""):
            out.inline.append(" : ")  # docutils' "term : classifier", its colon drawn by CSS (HTML5 writer)
        r.element(el, out)
    else:
        r.element(el, out)


def _label_from_classes(el: etree._Element) -> str:
    value = el.get("data-callout-type") or el.get("data-type")
    if value:
        return value
    fallback = ""
    for tok in (el.get("class") or "").split():
        for part in tok.replace("_", "-").split("-"):
            if part.lower() in KINDS:
                if tok not in ADMONITION_TOKENS and part not in ADMONITION_TOKENS:
                    return part
                fallback = fallback or part
    return fallback


def _title(el: etree._Element) -> tuple[etree._Element | None, str]:
    """The element holding an admonition's label (if any) and the label text."""
    title = box_title(el)
    if title is not None:
        return title, plain_text(title)
    return None, _label_from_classes(el)


def admonition(r: Walker, el: etree._Element, out: Out) -> None:
    """``> **Note:** body`` for every admonition family."""
    out.flush()
    if el.tag == "div" and not opens_with_label(el):
        r.block(el, out)  # a div.note that is no box with its label: a plain container
        return
    antora = el.find("table//td") if next(el.iterchildren("table"), None) is not None else None
    if antora is not None and "icon" in (antora.get("class") or ""):
        icon = antora.find("*[@title]")
        label = icon.get("title", "") if icon is not None else plain_text(antora)
        content = antora.getnext()
        body = r.blocks(content) if content is not None else []
    else:
        title_el, label = _title(el)
        body = r.blocks(el, exclude=title_el)
    label = label.strip().rstrip(":").strip()
    if label.islower():
        label = label.capitalize()
    if label and body and body[0].strip("*").rstrip(":").strip().lower() == label.lower():
        del body[0]  # the label written again by the box (DocBook's icon table: "[Tip]", then "Tip")
    if label:
        lead = f"**{escape(label)}:**"
        first = body[0] if body else ""
        if first and not first.startswith(("```", "> ", "|", "#", "**`")) and not is_list_block(first):
            body[0] = f"{lead} {first}"
        else:
            body.insert(0, lead)
    if not body:
        return
    if any(block.startswith("|") or (("```" in block or "~~~" in block) and fenced_blocks(block)) for block in body):
        # An admonition holding code (a fenced block anywhere in its body, as skillgraph.markdown
        # reads it; only a block with a run of three backticks or tildes can hold one, so no other
        # is scanned) or a table keeps its label and its blocks unquoted: a quoted fence ("> ```")
        # or table ("> |") is lost on naive line-based readers of the graph (an agent's grep, a
        # fence-pairing script, a pipe-table reader).
        out.blocks.extend(body)
    else:
        out.blocks.append(quote_lines("\n\n".join(body)))


def details(r: Walker, el: etree._Element, out: Out) -> None:
    """A collapsible block: its summary as a bold line, then its content."""
    out.flush()
    summary = next(el.iterchildren("summary"), None)
    if summary is not None and not kind(summary, "summary") & SKIP:
        blocks = r.blocks(summary)
        if len(blocks) == 1 and "\n" not in blocks[0] and not blocks[0].startswith(("#", "**")):
            out.blocks.append(f"**{blocks[0]}**")
        else:
            out.blocks.extend(blocks)
    out.blocks.extend(r.blocks(el, exclude=summary))


def remember_tabs(r: Walker, tablist: etree._Element) -> None:
    """Record tab labels so the following tab panels can be labelled."""
    for tab in _find_tabs(tablist):
        label = plain_text(tab)
        r.tab_queue.append(label)
        controls = tab.get("aria-controls")
        if controls and (controls not in r.tab_by_id or tab.get("aria-selected") == "true"):
            # tabs that filter one panel (Javadoc 17's "All Methods" ... "Deprecated Methods" over one table):
            # the panel is the selected tab's, not the last one's (every method read as deprecated)
            r.tab_by_id[controls] = label
        tab_id = tab.get("id")
        if tab_id:
            r.tab_by_id[tab_id] = label


def tab_label(r: Walker, panel: etree._Element) -> str:
    """Label of a tab panel: by ARIA ids when present, else by order."""
    for key in (panel.get("aria-labelledby"), panel.get("id")):
        if key and key in r.tab_by_id:
            label = r.tab_by_id.pop(key)
            if label in r.tab_queue:
                r.tab_queue.remove(label)
            return label
    return r.tab_queue.pop(0) if r.tab_queue else ""


def tabset(r: Walker, el: etree._Element, out: Out) -> None:
    """MkDocs Material ``tabbed-set``: labels are ``<label>``s, panels ``tabbed-block``s."""
    out.flush()
    labels: list[str] = []
    panels: list[etree._Element] = []
    for child in el:
        cls = child.get("class") or "" if isinstance(child.tag, str) else ""
        if child.tag == "label":
            labels.append(plain_text(child))
        elif "tabbed-labels" in cls:
            labels.extend(plain_text(lab) for lab in child.iterchildren("label"))
        elif "tabbed-content" in cls:
            blocks = [c for c in child if "tabbed-block" in (c.get("class") or "")]
            panels.extend(blocks or [child])
    for i, panel in enumerate(panels):
        if i < len(labels) and labels[i]:
            out.blocks.append(f"**{escape(labels[i])}**")
        out.blocks.extend(r.blocks(panel))


def signature(dt: etree._Element, out: Out) -> None:
    """An API signature (Sphinx ``dt.sig``) as a bold code span, every token kept."""
    out.flush()
    text = plain_text(dt)
    if text:
        out.blocks.append(f"**{code_span(text)}**")


def deflist(r: Walker, el: etree._Element, out: Out, api: bool = False) -> None:
    """Terms as bold lines (signatures as code), definitions as the blocks after them."""
    out.flush()
    api = api or bool(kind(el, "dl") & SIGNATURE)
    for child in el:
        tag = child.tag
        if not isinstance(tag, str):
            continue
        flags = kind(child, tag)
        if flags & SKIP:
            continue
        if tag == "dt":
            ident = child.get("id")
            if ident:  # an API entry's anchor (Sphinx's dt#json.dumps): an in-page link to it goes to this section
                r.anchored(ident)
            if next(child.iter("pre"), None) is not None:
                out.blocks.extend(r.blocks(child))  # a declaration in a <pre> (Nim's <dt><pre>): a fence, not a line
            elif api or flags & SIGNATURE:
                signature(child, out)
            else:
                term = r.one_line(child)
                if term:  # a term with bold of its own (Texinfo's <dt><b>, a definition's <strong>name) is not
                    # wrapped again: ``**Function: *int* **mpfr_set** (…)**`` closes the outer bold at the name
                    out.blocks.append(term if "**" in CODE_SPAN.sub("c", term) else f"**{term}**")
        elif tag == "div" and not flags:
            deflist(r, child, out, api)
        else:
            out.blocks.extend(r.blocks_of(child))


def math(r: Walker, el: etree._Element, out: Out) -> None:
    """MathML as its TeX annotation when there is one (KaTeX, MathJax), else its text."""
    found = _find_tex(el)
    tex = (found[0].text or "").strip() if found else " ".join(text_of(el).split())
    if not tex:
        return
    if el.get("display") == "block":
        out.flush()
        out.blocks.append(f"$$\n{tex}\n$$")
    else:
        out.inline.append(f"${tex}$")
