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
"""

from __future__ import annotations

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

    @property
    def static(self) -> bool:
        """No script at all: a browser would show the same page, rendering cannot help."""
        return self.executable == 0


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


def _app_root(root: etree._Element) -> etree._Element | None:
    found = _APP_ROOT(root, ids=_IDS, tags=_TAGS)
    return found[0] if isinstance(found, list) and found else None


def detect_shell(root: etree._Element | None) -> Shell:
    """Classify a parsed page (``response.selector.root``); ``None`` (no document) is not a shell."""
    if root is None:
        return Shell(False, "no document", 0, 0)
    scripts, executable = _scripts(root)
    if not scripts:
        return Shell(False, "no script bundles", -1, 0, executable)
    body = root.find("body")
    if body is None:
        body = root.find(".//body")
    scope = body if body is not None else root
    text = _visible_text_len(scope, SHELL_MAX_TEXT * 4)
    app = _app_root(scope)
    if app is not None:
        root_text = _visible_text_len(app, EMPTY_ROOT_TEXT)
        if root_text < EMPTY_ROOT_TEXT and text < SHELL_MAX_TEXT * 4:
            label = app.get("id") or app.tag
            return Shell(True, f"empty app root #{label} with {scripts} script bundle(s)", text, scripts, executable)
    if text < SHELL_MAX_TEXT:
        return Shell(True, f"{text} visible characters with {scripts} script bundle(s)", text, scripts, executable)
    return Shell(False, "has content", text, scripts, executable)
