"""Where the main content of a page is, per generator family.

Each family lists its content containers from most to least specific (the
innermost container that still holds the page title when possible), followed
by the generic landmark chain ``main``, ``article``, ``[role=main]``.  Pages
with none of them go to the structural scorer (:mod:`select`).

Selection is one pass over the container elements (``iter`` filtered by tag
in C) with the rules indexed by tag, stopping at the first match of the best
rule.  It replaces a series of ``//x[...]`` XPath queries, each of which
walked the whole document (measured 10-20x slower on Python docs pages).  In
the extractor the body's containers come from the census's walk of the page
(:func:`landmark_candidates`): a tag-filtered ``iter`` still visits every node.
"""

from __future__ import annotations

from typing import NamedTuple

from lxml import etree


class Rule(NamedTuple):
    """``tags`` element with ``attr`` equal to ``value`` (or holding it as a class token)."""

    tags: tuple[str, ...]
    attr: str | None = None
    value: str = ""


_BLOCKS = ("div", "main", "article", "section")


def _cls(tags: str, token: str) -> Rule:
    return Rule(tuple(tags.split()), "class", token)


_GENERIC = (Rule(("main",)), Rule(("article",)), Rule(_BLOCKS, "role", "main"))

RULES: dict[str | None, tuple[Rule, ...]] = {
    "sphinx": (
        _cls("article", "bd-article"),
        Rule(("div", "article"), "itemprop", "articleBody"),
        Rule(("article",), "id", "furo-main-content"),
        Rule(("div",), "role", "main"),
        Rule(_BLOCKS, "role", "main"),
        _cls("div", "body"),
        _cls("div", "document"),
    ),
    "mkdocs-material": (_cls("article", "md-content__inner"), _cls("div", "md-content")),
    "mkdocs": (Rule(_BLOCKS, "role", "main"), Rule(("div", "article"), "itemprop", "articleBody")),
    "docusaurus": (_cls("div", "theme-doc-markdown"),),
    "starlight": (Rule(("main",)),),
    "vitepress": (_cls("div", "vp-doc"),),
    "mintlify": (Rule(("div",), "id", "content-area"), Rule(("div",), "id", "content")),
    "gitbook": (Rule(("main",)),),
    "nextra": (Rule(("article",)),),
    "antora": (_cls("article", "doc"),),
    "rustdoc": (Rule(_BLOCKS, "id", "main-content"),),
    "mdbook": (Rule(("main",)), Rule(("div",), "id", "content")),
    "javadoc": (Rule(("main",)), _cls("div", "contentContainer")),
    "mediawiki": (
        Rule(("div",), "id", "mw-content-text"),
        Rule(("div",), "id", "bodyContent"),
        Rule(("div",), "id", "content"),
    ),
}

_Index = dict[str, list[tuple[int, Rule]]]


def _index(rules: tuple[Rule, ...]) -> _Index:
    by_tag: _Index = {}
    for rank, rule in enumerate(rules):
        for tag in rule.tags:
            by_tag.setdefault(tag, []).append((rank, rule))
    return by_tag


_INDEXED: dict[str | None, _Index] = {
    family: _index(rules + _GENERIC) for family, rules in {**RULES, None: ()}.items()
}


def _matches(el: etree._Element, rule: Rule) -> bool:
    if rule.attr is None:
        return True
    value = el.get(rule.attr)
    if value is None:
        return False
    return rule.value in value.split() if rule.attr == "class" else value == rule.value


def _one_of_several(root: etree._Element, article: etree._Element) -> bool:
    """True when another ``<article>``, not inside this one, is on the page."""
    for other in root.iter("article"):
        if other is not article and not any(a is article for a in other.iterancestors()):
            return True
    return False


#: The tags of every family's containers (the generic chain's ``[role=main]`` takes them all).
LANDMARK_TAGS = frozenset(_BLOCKS)
assert all(index.keys() == LANDMARK_TAGS for index in _INDEXED.values())


def landmark_candidates(root: etree._Element, body: etree._Element,
                        inside: list[etree._Element]) -> list[etree._Element]:
    """``root.iter(*LANDMARK_TAGS)`` as a list, given the part of it under ``body`` (a child of ``root``, or ``root``).

    A tag-filtered ``iter`` walks every node of the page in C (a quarter of a millisecond on a
    Python docs page): the census of code blocks and headings gathers the body's landmarks on its
    own walk (:class:`skillgraph.extract.shape.Census`), and only what is outside the body is walked here.
    """
    if body is root:
        return inside
    found = [root] if root.tag in LANDMARK_TAGS else []
    for child in root:
        if child is body:
            found += inside
        else:
            found.extend(child.iter(*LANDMARK_TAGS))
    return found


def main_content(root: etree._Element, family: str | None,
                 candidates: list[etree._Element] | None = None) -> etree._Element | None:
    """The main-content element for ``family``, or None when no landmark exists.

    ``candidates``: the page's elements of :data:`LANDMARK_TAGS` in document order
    (:func:`landmark_candidates`), when a walk gathered them already.
    """
    by_tag = _INDEXED.get(family, _INDEXED[None])
    best: etree._Element | None = None
    best_rank = 1 << 30
    bare = False
    for el in root.iter(*by_tag) if candidates is None else candidates:
        for rank, rule in by_tag[str(el.tag)]:
            if rank >= best_rank:
                break
            if _matches(el, rule):
                best, best_rank, bare = el, rank, rule.attr is None
                break
        if best_rank == 0:
            break
    if best is not None and bare and best.tag == "article" and _one_of_several(root, best):
        return None  # one entry of a listing (Erlang's functions, a blog index): not the page
    if best is not None and family == "javadoc" and best.tag == "div":
        parent = best.getparent()  # old javadoc: title in a sibling div.header
        best = parent if parent is not None else best
    return best
