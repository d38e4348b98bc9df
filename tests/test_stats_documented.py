"""Every stat the code records is listed in docs/stats.md (as every setting is in docs/settings.md)."""

from __future__ import annotations

import re

from tests.conftest import ROOT

STAT_CALL = re.compile(r"\.(?:inc_value|set_value|max_value|min_value)\(\s*(f?)\"([^\"]+)\"")
CONSTANT = re.compile(r"^([A-Z_]+)\s*=\s*\"(skillgraph/[^\"]*)\"", re.M)
DOC_STAT = re.compile(r"`(skillgraph/[^`]+)`")
PLACEHOLDER = re.compile(r"\{[^}]*\}|<[^>]*>")


def shape(name: str) -> str:
    """A stat with its variable parts (``{kind}`` in code, ``<kind>`` in the docs) made alike."""
    return PLACEHOLDER.sub("*", name)


def code_stats() -> dict[str, str]:
    """Stat names recorded by the code (f-string parts as placeholders), each with where it is."""
    found: dict[str, str] = {}
    for path in sorted((ROOT / "skillgraph").rglob("*.py")):
        text = path.read_text("utf-8")
        constants = dict(CONSTANT.findall(text))
        for is_f, name in STAT_CALL.findall(text):
            if is_f:
                for constant, value in constants.items():
                    name = name.replace("{" + constant + "}", value)
            if name.startswith("skillgraph/"):
                found.setdefault(name, str(path.relative_to(ROOT)))
    return found


def documented() -> set[str]:
    return {shape(name) for name in DOC_STAT.findall((ROOT / "docs" / "stats.md").read_text("utf-8"))}


def matches(stat: str, docs: set[str]) -> bool:
    target = shape(stat)
    if target in docs:
        return True
    # a documented family (`skillgraph/x/<reason>`) covers each of its literal members, and a stat built
    # from variable parts covers the documented rows it can produce (`tiers/<tier>/passed`)
    family = re.escape(target).replace(r"\*", "[^/]+")
    return any(re.fullmatch(re.escape(doc).replace(r"\*", "[^/]+"), stat) or re.fullmatch(family, doc)
               for doc in docs)


def test_the_scan_finds_the_stats_it_should() -> None:
    stats = code_stats()
    assert "skillgraph/graph/pages" in stats
    assert "skillgraph/quality/warnings/{kind}" in stats, "module constants inside f-strings are resolved"
    assert len(stats) > 50


def test_every_stat_is_documented() -> None:
    docs = documented()
    missing = {name: where for name, where in code_stats().items() if not matches(name, docs)}
    assert not missing, "stats missing from docs/stats.md: " + ", ".join(f"{n} ({w})" for n, w in missing.items())
