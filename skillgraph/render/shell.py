"""Client-side-rendered shell detection: is this HTML an empty app waiting for JavaScript?

A CSR shell (create-react-app, Vite, Angular, Vue, a Next.js SPA export) sends an
empty mount point and script bundles; the text arrives only after the scripts
run. The quality gates see a thin page and fail it, but cannot say *why*; this
check can, cheaply (one pass over the tree Scrapy already parsed), so the tier
ladder sends a shell straight to the browser instead of trying content
negotiation first, and never accepts a shell as an ``html`` document even if
its ``<noscript>`` text happens to pass the gates.

A shell is: an empty app root (``#root``, ``#app``, ``#__next``, ``#__nuxt``,
``#___gatsby``, ``#svelte``, ``#q-app``, ``<app-root>``, ``[data-reactroot]``)
with script bundles; or, without a known root, almost no visible text
(``SHELL_MAX_TEXT`` characters outside scripts, styles, noscript and templates)
and at least one external or module script.

A page that is no shell but still failed the gates is rendered only when a browser
could show more (:attr:`Shell.render_skip` says why not otherwise): it has scripts,
and its main region (``<main>``, ``[role=main]``, ``<article>``, else the body) is
empty or holds an empty mount (a ``div``/``section`` with an ``id``, an
``<article>``, a custom element) for scripts to fill — a hybrid page, static
navigation around a client-rendered article. A thin page whose main region is all
static content (a short index page of a Sphinx site, its theme's scripts doing
nothing to it) looks the same in a browser; a search page (a form that queries the
page itself) shows results only for a query the crawl does not have. Starting a
browser for either costs seconds of CPU for nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from lxml import etree

APP_ROOT_IDS = frozenset({"root", "app", "__next", "__nuxt", "___gatsby", "svelte", "q-app", "main-app", "react-root"})
APP_ROOT_TAGS = frozenset({"app-root"})
INVISIBLE = frozenset({"script", "style", "noscript", "template", "head", "title", "meta", "link", "svg"})
#: Visible characters below which a page with script bundles is a shell.
SHELL_MAX_TEXT = 200
#: A mount point with less visible text than this counts as empty ("Loading…").
EMPTY_ROOT_TEXT = 40


@dataclass(frozen=True)
class Shell:
    is_shell: bool
    reason: str  #: why (or why not), for logs and warnings
    text_chars: int  #: visible characters outside scripts/styles (counted up to 800; -1: not counted)
    scripts: int  #: external or module scripts
    executable: int = 0  #: every script a browser would run, inline ones included
    render_skip: str = ""  #: why a browser would show nothing more ("" when it might)

    @property
    def static(self) -> bool:
        """No script at all: a browser would show the same page, rendering cannot help."""
        return self.executable == 0

    def skip_render(self, blocked: bool) -> str:
        """Why a failed page is not worth a browser, or '' to render it.

        A block page may be a script challenge: it goes to the browser unless it has no scripts at all.
        """
        if self.static:
            return self.render_skip or "the page has no scripts"
        return "" if blocked else self.render_skip


def _visible_text_len(node: etree._Element, limit: int) -> int:
    """Characters of text a reader would see under ``node`` (scripts, styles, templates skipped).

    Stops counting past ``limit``: the answer only matters for nearly empty pages.
    """
    if _invisible(node):
        return 0
    total = 0
    stack = [node]
    while stack and total <= limit:
        element = stack.pop()
        total += len((element.text or "").strip())
        for child in element:
            total += len((child.tail or "").strip())
            if not _invisible(child):
                stack.append(child)
    return total


def _invisible(element: etree._Element) -> bool:
    return not isinstance(element.tag, str) or element.tag in INVISIBLE


def _scripts(root: etree._Element) -> tuple[int, int]:
    """(external or module scripts, scripts a browser would run), in one walk of the document."""
    bundles = executable = 0
    for script in root.iter("script"):
        declared = (script.get("type") or "").lower()
        kind = declared.strip()
        if script.get("src") or declared == "module":
            bundles += 1
        if not kind or kind == "module" or "javascript" in kind or "ecmascript" in kind:
            executable += 1
    return bundles, executable


#: One pass in C: the first element that is a known mount point.
_APP_ROOT = etree.XPath(
    "(.//*[(@id and contains($ids, concat(' ', @id, ' '))) or @data-reactroot or contains($tags, concat(' ', "
    "local-name(), ' '))])[1]")
_IDS = " " + " ".join(sorted(APP_ROOT_IDS)) + " "
_TAGS = " " + " ".join(sorted(APP_ROOT_TAGS)) + " "


#: The values of every ``id`` and ``data-reactroot`` under a node, gathered in C (each knows its attribute's name).
_ID_MARKS = etree.XPath(".//@id | .//@data-reactroot")


def _app_root(root: etree._Element) -> etree._Element | None:
    """The first known mount point under ``root``, in document order.

    :data:`_APP_ROOT` compares a string per element (~2.5 ms on a Python docs page); almost no page
    has a mount point, so its ids are gathered first (~0.5 ms) and the XPath runs only when one may be there.
    """
    if next(root.iterdescendants(*APP_ROOT_TAGS), None) is None and not any(
            mark.attrname == "data-reactroot" or mark in APP_ROOT_IDS for mark in _ID_MARKS(root)):
        return None
    found = _APP_ROOT(root, ids=_IDS, tags=_TAGS)
    return found[0] if isinstance(found, list) and found else None


def _main_region(scope: etree._Element) -> etree._Element:
    """The page's own region, the first ``main``, ``[role=main]`` or ``article`` under ``scope``, else ``scope``:
    a mount point is looked for there (a theme's empty widgets elsewhere are not content).

    A walk that stops at the first one: it is near the top of most pages (an XPath union collects all three first).
    """
    for element in scope.iterdescendants(etree.Element):
        if element.tag in ("main", "article") or element.get("role") == "main":
            return element
    return scope


def _small_mounts(main: etree._Element) -> Iterator[etree._Element]:
    """Elements under ``main`` that scripts fill (id'd blocks, articles, custom elements: ``<redoc>`` has no id,
    any id'd div around it has) holding at most one child, in document order, found lazily."""
    for element in main.iterdescendants(etree.Element):
        if len(element) > 1:
            continue
        tag = element.tag
        if tag in ("article", "main") or "-" in tag or (tag in ("div", "section") and element.get("id") is not None):
            yield element
#: A GET form with a text box in the main region; when it submits to the page itself, the results come from its query.
_QUERY_FORMS = etree.XPath(".//form[not(@method) or translate(@method, 'GET', 'get') = 'get']"
                           "[.//input[not(@type) or @type = 'text' or @type = 'search']]")


def render_skip(scope: etree._Element, page_name: str) -> str:
    """Why rendering this (non-shell, scripted) page would show nothing more, or '' when it might."""
    main = _main_region(scope)
    for form in _QUERY_FORMS(main):  # an explicit action: no action at all is a script's box (rustdoc's)
        action = form.get("action")
        target = None if action is None else action.strip().split("?")[0].split("#")[0].rsplit("/", 1)[-1]
        if target is not None and target in ("", page_name):
            return "a search page: its results need a query"
    if _visible_text_len(main, EMPTY_ROOT_TEXT) < EMPTY_ROOT_TEXT:
        return ""
    for element in _small_mounts(main):
        if _visible_text_len(element, EMPTY_ROOT_TEXT) < EMPTY_ROOT_TEXT:
            return ""  # empty, or one "Loading…" child: a mount (a short section has a heading and its text)
    return "nothing in its main region waits for scripts (no empty mount)"


def detect_shell(root: etree._Element | None, url: str = "") -> Shell:
    """Classify a parsed page (``response.selector.root``); ``None`` (no document) is not a shell."""
    if root is None:
        return Shell(False, "no document", 0, 0)
    scripts, executable = _scripts(root)
    body = root.find("body")
    if body is None:
        body = root.find(".//body")
    scope = body if body is not None else root
    page_name = url.split("?")[0].split("#")[0].rsplit("/", 1)[-1]
    if not scripts:
        skip = "the page has no scripts" if not executable else render_skip(scope, page_name)
        return Shell(False, "no script bundles", -1, 0, executable, skip)
    text = _visible_text_len(scope, SHELL_MAX_TEXT * 4)
    app = _app_root(scope)
    if app is not None:
        root_text = _visible_text_len(app, EMPTY_ROOT_TEXT)
        if root_text < EMPTY_ROOT_TEXT and text < SHELL_MAX_TEXT * 4:
            label = app.get("id") or app.tag
            return Shell(True, f"empty app root #{label} with {scripts} script bundle(s)", text, scripts, executable)
    if text < SHELL_MAX_TEXT:
        return Shell(True, f"{text} visible characters with {scripts} script bundle(s)", text, scripts, executable)
    return Shell(False, "has content", text, scripts, executable, render_skip(scope, page_name))
