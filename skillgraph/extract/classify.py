"""What an element *is*, decided from its tag and attributes only.

The renderer never removes boilerplate from the tree (the spider follows links
from the same parsed response afterwards); it asks :func:`kind` about every
element while walking and skips what is chrome.  Class strings repeat
thousands of times per site, so their analysis is memoised per distinct
string: one dict lookup per element on the hot path.
"""

from __future__ import annotations

from lxml import etree

#: The heading tags (the census, the selector, the renderer's admonition labels and in-page links).
HEADINGS = frozenset(["h1", "h2", "h3", "h4", "h5", "h6"])

# Bit flags returned by kind().
SKIP = 1
ADMONITION = 2
SIGNATURE = 4
TABSET = 8
TABLIST = 16
TABPANEL = 32
LAYOUT = 64
CODE = 128
SEPARATOR = 256
#: docutils' ``term : classifier`` (numpydoc's ``name : type``): the colon is CSS (``.classifier:before``).
CLASSIFIER = 512
#: A table laid out by a CSS grid (Javadoc 17's ``div.summary-table``: header cells, then a cell a div).
GRID = 1024
#: Inline text set in a monospace font by its own ``style`` (HeVeA's ``<span style="font-family:monospace">``):
#: code, as ``<code>`` is.
MONOSPACE = 2048
#: The inline tags whose ``style`` can make them code (a styled ``<div>`` may hold paragraphs).
_MONOSPACE_TAGS = frozenset(["span", "font"])

#: Class tokens of an inline separator whose mark is drawn by CSS (``span.sep::after { content: "▸" }``,
#: gi-docgen's ``Soup<span class="sep"></span>Session``): empty in the markup, a space in the text.
SEPARATOR_TOKENS = frozenset(["sep", "separator"])

#: Never content: scripts, forms, media without text, site chrome landmarks. ``address`` is the contact
#: details of a page's author or owner (HTML: "for its nearest article or body"), a footer by another name:
#: LaTeX2HTML and texi2html sign every page with one, and a site's pages would each end with the same line.
#: ``noframes`` is a frameset's text for browsers without frames, which the parser reads as raw text (escaped HTML).
SKIP_TAGS = frozenset(
    [
        "script", "style", "noscript", "template", "svg", "button", "form", "input", "select", "textarea", "option",
        "nav", "iframe", "object", "embed", "canvas", "dialog", "link", "meta", "head", "video", "audio", "source",
        "track", "map", "area", "colgroup", "col", "address", "noframes",
    ]
)

#: Class tokens that mark chrome on any element. ``ttc`` is Doxygen's tooltip (SOURCE_TOOLTIPS): a symbol's
#: name, brief and definition, hidden in each code fragment until hovered; ``navset*`` Scribble's and
#: ``chlink*`` GAPDoc's bars ("Goto Chapter: Top 1 2 ... 87", previous / next) and ``ChapSects`` its on-page contents;
#: ``permalink`` a link to the element itself on any tag (Doxygen's ``span.permalink``: "◆", Scaladoc's); Scaladoc's
#: ``shortcomment`` is the first sentence of the ``fullcomment`` beside it (every description was written twice).
_SKIP_TOKENS = frozenset(
    [
        "toc", "table-of-contents", "local-toc", "on-this-page", "toc-drawer", "md-sidebar", "breadcrumb",
        "breadcrumbs", "wy-breadcrumbs", "theme-doc-breadcrumbs", "md-path", "sphinxsidebar", "sphinxsidebarwrapper",
        "related", "rst-footer-buttons", "footer", "pagination", "pagination-nav", "prev-next", "related-pages",
        "md-footer", "page-footer", "VPDocFooter", "pager", "edit-this-page", "theme-edit-this-page", "edit-page",
        "edit-link", "md-content__button", "md-source-file", "feedback", "was-this-helpful", "cookie-banner",
        "cookie-consent", "version-switcher", "version_switcher_placeholder", "language_switcher_placeholder",
        "version-picker", "skip-link", "skip-to-content", "sr-only", "visually-hidden", "screen-reader-text",
        "copybutton", "copy-button", "copy", "clipboard", "viewcode-link", "viewcode-back", "mw-editsection", "navbox",
        "vertical-navbox", "catlinks", "mw-jump-link", "printfooter", "mw-indicators", "theme-doc-toc-mobile",
        "theme-doc-toc-desktop", "theme-doc-version-badge", "theme-doc-version-banner", "hideme", "out-of-band",
        "topNav", "bottomNav", "subNav", "navList", "legalCopy", "skipNav", "header-anchor-container", "back-to-top",
        "content-icon-container", "lang", "buttons", "theme-doc-footer", "theme-last-updated",
        "docMainContainer-footer", "toc-tree", "toc-sticky", "toc-title", "toc-container", "toc-wrapper",
        "toc-list", "tocwrapper", "toctree-wrapper", "print:hidden", "print:nx-hidden", "d-print-none", "noprint",
        "no-print", "hidden-print", "navheader", "navfooter", "nav-header", "nav-footer", "navbar", "nav-bar",
        "navigation", "nav-panel", "navpath", "topnav", "site-header", "site-footer", "dropdown-menu", "ttc",
        "navsettop", "navsetbottom", "chlinktop", "chlinkbot", "chlinkprevnexttop", "chlinkprevnextbot",
        "ChapSects", "nav_table", "permalink", "shortcomment",
    ]
)

#: Class substrings that mark chrome (matched inside each class token): ``prev-next`` is the previous /
#: next buttons under the page (pydata-sphinx-theme and sphinx-book-theme's ``div.prev-next-area``,
#: inside ``main``; ``prev-next-footer``, ``prev-next-bottom``).
_SKIP_SUBSTRINGS = ("breadcrumb", "pagination", "cookie", "edit-this-page", "feedback", "prev-next")

#: Class tokens of permalink anchors; only meaningful on ``<a>`` (Docusaurus
#: puts class ``anchor`` on the heading itself).
_ANCHOR_TOKENS = frozenset(
    [
        "headerlink", "anchor", "anchorjs-link", "hash-link", "sl-anchor-link", "header-anchor", "anchor-link",
        "permalink", "subheading-anchor", "heading-anchor", "autolink-anchor", "doc-anchor", "src", "rightside",
    ]
)

ADMONITION_TOKENS = frozenset(
    [
        "admonition", "admonitionblock", "theme-admonition", "starlight-aside", "custom-block", "hint", "callout",
        "alert", "markdown-alert", "nextra-callout", "sidebar", "topic",
    ]
)
#: Class tokens a ``<div>`` is an admonition by, alone, when it opens with its label (DocBook XSL's
#: ``div.note > h3.title``, or its icon table): PostgreSQL's, Apache's, X.org's and Wireshark's notes read as
#: "### Note" headings in the outline.
BOXED_KINDS = frozenset(["note", "tip", "warning", "caution", "important"])
#: Lists used for page layout (Javadoc), rendered as plain containers.
_LAYOUT_TOKENS = frozenset(["summary-list", "member-list", "details-list", "block-list", "blockList"])
#: Class tokens of an ``aside`` that is the page's text: docutils' HTML5 writer (0.18+, Sphinx 5+) puts
#: footnotes in ``aside.footnote-list`` > ``aside.footnote`` (older writers in ``dl.footnote``).
_NOTE_TOKENS = frozenset(["footnote", "footnote-list"])
#: Class tokens of code containers that hold lines without a ``<pre>`` (Doxygen ``div.fragment``; DocBook's
#: ``div.literallayout``, lines set with ``<br>`` and ``&nbsp;``: :func:`~skillgraph.extract.code.layout_text`).
CODE_TOKENS = frozenset(["fragment", "programlisting", "codeblock", "code-block", "listing", "sourcecode",
                         "literallayout"])
_SIG_DL_TOKENS = frozenset(
    [
        "function", "class", "method", "attribute", "data", "exception", "classmethod", "staticmethod", "describe",
        "cmdoption", "envvar", "decorator", "decoratormethod", "property", "type", "member", "macro", "var", "struct",
        "coroutinefunction", "coroutinemethod", "abstractmethod", "opcode", "pdbcommand",
    ]
)

#: Admonition kinds, used for labels taken from class names (``hint-warning``).
KINDS = frozenset(
    [
        "note", "tip", "info", "warning", "caution", "danger", "important", "hint", "error", "attention", "seealso",
        "success", "question", "example", "quote", "abstract", "bug", "failure", "check", "todo", "summary",
        "deprecated",
    ]
)

SKIP_ROLES = frozenset(["navigation", "banner", "contentinfo", "search"])
SKIP_IDS = frozenset(
    [
        "toc", "sidebar", "breadcrumbs", "cookie-banner", "cookie-consent", "footer", "mw-navigation", "siteSub",
        "contentSub", "jump-to-nav", "catlinks", "page-footer", "side-nav", "nav-tree", "nav-path", "main-nav",
        "MSearchBox", "MSearchSelectWindow", "MSearchResultsWindow", "titlearea", "mathjaxlink", "mbrsel",
    ]
)

_cache: dict[tuple[str, str], int] = {}
CACHE_LIMIT = 50_000


def _classify(tag: str, cls: str) -> int:
    flags = 0
    tokens = cls.split()
    if "contents" in tokens and (tag == "nav" or "topic" in tokens or "local" in tokens):
        return SKIP  # Sphinx / docutils local table of contents (Doxygen's div.contents is the page)
    for tok in tokens:
        if tok in _SKIP_TOKENS or (tag == "a" and tok in _ANCHOR_TOKENS):
            return SKIP
        if tok != "sidebar" and "sidebar" in tok:
            return SKIP
        if any(s in tok for s in _SKIP_SUBSTRINGS):
            return SKIP
        if tok in ADMONITION_TOKENS:
            flags |= ADMONITION
        if tok == "tabbed-set":
            flags |= TABSET
        if tok in _LAYOUT_TOKENS and tag in ("ul", "ol"):
            flags |= LAYOUT
        if tok in CODE_TOKENS and tag == "div":
            flags |= CODE
        if tok in SEPARATOR_TOKENS and tag == "span":
            flags |= SEPARATOR
        if tok == "classifier" and tag == "span":
            flags |= CLASSIFIER
        if tok == "summary-table" and tag == "div":
            flags |= GRID
    if tag == "dt" and ("sig" in tokens or "sig-object" in tokens):
        flags |= SIGNATURE
    if tag == "dl" and _SIG_DL_TOKENS.intersection(tokens):
        flags |= SIGNATURE
    if tag == "details" and KINDS.intersection(tokens):
        flags |= ADMONITION
    if tag == "div" and not flags & ADMONITION and BOXED_KINDS.intersection(tokens):
        flags |= ADMONITION  # DocBook's div.note / div.warning: an admonition if it opens with its label

    if tag == "aside" and not flags & ADMONITION and _NOTE_TOKENS.isdisjoint(tokens):
        return SKIP
    return flags


_code_cache: dict[str, bool] = {}


def code_class(cls: str) -> bool:
    """Does a class string hold a :data:`CODE_TOKENS` token (memoised)?

    The cheap question to ask of every ``<div>`` before :func:`kind`: only those it says
    yes for can be code containers.
    """
    found = _code_cache.get(cls)
    if found is None:
        if len(_code_cache) > CACHE_LIMIT:  # keep memory bounded over a long crawl
            _code_cache.clear()
        found = _code_cache[cls] = not CODE_TOKENS.isdisjoint(cls.split())
    return found


_ATTR_NAMES = frozenset(["role", "aria-hidden", "hidden", "id", "style"])
_BARE = dict.fromkeys(SKIP_TAGS | {"aside", "footer"}, SKIP)


def kind(el: etree._Element, tag: str) -> int:
    """Flags for ``el``: SKIP for boilerplate, else the bits saying how to render it.

    Hot path (called for every element walked): an element without attributes
    costs one dict lookup, one with only a class a memoised lookup more (the memo
    holds the verdict of the tag and the class together, so nothing else is asked).
    """
    names = el.keys()
    if not names:
        return _BARE.get(tag, 0)
    cls = el.get("class")
    if cls is not None:
        key = (tag, cls)
        flags = _cache.get(key, -1)
        if flags < 0:
            if len(_cache) > CACHE_LIMIT:  # a long multi-site crawl: keep memory bounded
                _cache.clear()
            flags = _cache[key] = _tag_and_class(tag, cls)
        if flags & SKIP or len(names) == 1:
            return flags
    elif tag in _BARE:  # the skipped tags, <aside> and <footer>: skipped whatever their attributes
        return SKIP
    else:
        flags = 0
    if _ATTR_NAMES.isdisjoint(names):
        return flags
    for name in names:
        if name in _ATTR_NAMES:
            flags |= _by_attribute(el, name)
            if flags & SKIP:
                return SKIP
    return flags


def _names_a_kind(el: etree._Element) -> bool:
    return " ".join("".join(el.itertext()).split()).strip("¶# ").rstrip(":").lower() in KINDS


def box_title(el: etree._Element) -> etree._Element | None:
    """The element holding an admonition's label: its first element child, when that is a ``<summary>``, a
    title or heading by its class, or a heading naming a kind (Apache's ``div.note > h3`` "Note")."""
    for child in el:
        if not isinstance(child.tag, str):
            continue
        cls = (child.get("class") or "").lower()
        if child.tag == "summary" or "title" in cls or "heading" in cls or (
                child.tag in HEADINGS and _names_a_kind(child)):
            return child
        return None
    return None


def opens_with_label(el: etree._Element) -> bool:
    """Does a ``div.note`` (:data:`BOXED_KINDS` alone) open with its label: a title naming its kind, or
    DocBook's icon table (``[Warning]``)? Only then is it an admonition, not a plain container."""
    if not ADMONITION_TOKENS.isdisjoint((el.get("class") or "").split()):
        return True
    first = next((child for child in el if isinstance(child.tag, str)), None)
    if first is None:
        return False
    if first.tag == "table":
        return first.find(".//img[@alt]") is not None
    return (first.tag in HEADINGS or "title" in (first.get("class") or "")) and _names_a_kind(first)


def labels_a_box(heading: etree._Element) -> bool:
    """Is a heading an admonition's label (the renderer writes it as ``**Note:**``, not as a heading)?"""
    node = heading
    for _ in range(2):  # the box, or the box's heading wrapper (Docusaurus's div.admonition-heading > h5)
        box = node.getparent()
        if box is None:
            return False
        if kind(box, str(box.tag)) & ADMONITION and (box.tag != "div" or opens_with_label(box)):
            return box_title(box) is node
        node = box
    return False


def _shown_alternative(el: etree._Element) -> bool:
    """Is ``el`` the variant a script would show, among siblings that are all ``hidden``?

    LibreOffice's help writes each platform's text as a hidden variant (``<span class="switchinline"><span
    hidden class="MAC">Command</span><span hidden id="default...">Ctrl</span></span>+F2``) and shows one:
    with all of them hidden the page read "+F2", and Basic examples lost their code. The one whose id or
    class says ``default`` is shown, else the first.
    """
    parent = el.getparent()
    if parent is None:
        return False
    variants = [child for child in parent if child.tag.__class__ is str]
    if len(variants) < 2 or any(child.get("hidden") is None for child in variants):
        return False
    shown = next((v for v in variants if "default" in f"{v.get('id') or ''} {v.get('class') or ''}".lower()),
                 variants[0])
    return shown is el


def _tag_and_class(tag: str, cls: str) -> int:
    """:func:`kind` of an element with a class and no other attribute that says anything."""
    if tag in SKIP_TAGS or tag == "footer":
        return SKIP
    return _classify(tag, cls)


def _by_attribute(el: etree._Element, name: str) -> int:
    value = el.get(name) or ""
    if name == "role":
        if value in SKIP_ROLES:
            return SKIP
        if value == "tablist":
            return TABLIST
        return TABPANEL if value == "tabpanel" else 0
    if name == "aria-hidden":
        return SKIP if value == "true" else 0
    if name == "hidden":
        return 0 if el.get("role") == "tabpanel" or _shown_alternative(el) else SKIP
    if name == "id":
        return SKIP if value in SKIP_IDS else 0
    if "none" in value and "display:none" in value.replace(" ", ""):
        return SKIP
    if "monospace" in value and el.tag in _MONOSPACE_TAGS and "font-family" in value:
        return MONOSPACE
    return 0
