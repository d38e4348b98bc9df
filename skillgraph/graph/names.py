"""Graph names and page file names: untrusted input that becomes a path.

A graph name arrives from a user (``-a graph=``), over HTTP (scrapyd's
``schedule.json``), from Redis (a fleet's build) or from a URL (the default
name); a page file name comes from a URL the site chose. Every one of them
becomes a path under ``SKILLGRAPH_GRAPHS_DIR``. So there is one rule, checked
where a name enters (a command's start, a spider's arguments) and again where
it becomes a path (:func:`graph_path`, the graph folder's writes):

* a **graph name** is a single path segment of 1-100 characters from
  ``A-Z a-z 0-9 . _ -``, starting with a letter or a digit (so never ``.``,
  ``..``, a hidden name such as ``.builds`` or an option such as ``-x``), not
  ending in ``.json`` (``<name>.failed.json`` and the batch report live beside
  graphs) and not ``batch-logs`` (the batch runner's log folder);
* a **page file name** is a single segment of the same alphabet, at most 200
  characters, starting with a letter, a digit or ``_``.

Names derived from URLs (:func:`name_from_url`) are made to fit the rule
rather than refused: a host in another script becomes its IDNA form, other
characters become ``_``, and an overlong name keeps its head and a hash of the whole.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

#: The graph name rule, as a regular expression and in words (error messages and docs say the same).
GRAPH_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
GRAPH_NAME_RULE = "1-100 letters, digits, '.', '_' or '-', starting with a letter or digit, not ending in .json"
#: Names the graphs folder uses for itself.
RESERVED_GRAPH_NAMES = frozenset({"batch-logs"})
MAX_GRAPH_NAME = 100
#: Page files: one segment; 200 characters leave room for ``-N.md`` and the temp prefix under 255 bytes.
FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,199}")

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class GraphNameError(ValueError):
    """A graph name that is not one safe path segment; the message is the sentence to print."""

    def __init__(self, name: object, where: str = "graph name ") -> None:
        self.name = name
        shown = repr(name) if len(str(name)) <= 60 else repr(str(name)[:57] + "...")
        super().__init__(f"{where}{shown} is not allowed ({graph_name_problem(name)}): a graph name is "
                         f"{GRAPH_NAME_RULE}, e.g. python_docs")


class UnsafePathError(OSError):
    """A path a graph would write that does not lie inside the folder it must (the writer refuses)."""


def graph_name_problem(name: object) -> str | None:
    """Why ``name`` is not a graph name, or None when it is one."""
    if not isinstance(name, str) or not name:
        return "empty"
    if len(name) > MAX_GRAPH_NAME:
        return f"longer than {MAX_GRAPH_NAME} characters"
    if not GRAPH_NAME.fullmatch(name):
        return "not one segment of the allowed characters"
    if name.lower().endswith(".json") or name.lower() in RESERVED_GRAPH_NAMES:
        return "a name the graphs folder uses itself"
    return None


def check_graph_name(name: object, where: str = "graph name ") -> str:
    """``name`` when it is a graph name; else :class:`GraphNameError` (one sentence)."""
    if graph_name_problem(name) is not None:
        raise GraphNameError(name, where)
    assert isinstance(name, str)
    return name


def is_graph_name(name: object) -> bool:
    return graph_name_problem(name) is None


def fit_name(text: str, limit: int = MAX_GRAPH_NAME, sep: str = "_") -> str:
    """``text`` made into a name of the alphabet: other characters become ``sep``, an overlong one is cut
    and ends in a hash of the whole (two long names stay two names)."""
    name = re.sub(re.escape(sep) + "{2,}", sep, _UNSAFE.sub(sep, text)).strip("._-")
    if len(name) > limit:
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:10]
        name = name[: limit - len(digest) - 1].rstrip("._-") + sep + digest
    return name


def ascii_host(host: str) -> str:
    """A host as a name part: its IDNA (``xn--``) form when it is not ASCII, lower case."""
    host = host.lower().rstrip(".")
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            host = host.encode("punycode").decode("ascii")
    return host


def graph_name_from(text: str) -> str:
    """Any text (a default name built from a URL) as a valid graph name."""
    name = fit_name(text)
    if name.lower().endswith(".json"):
        name = name[: -len(".json")] + "_json"
    if not is_graph_name(name):
        name = fit_name("site_" + name)
    return name


def graph_path(graphs_dir: Path, name: str) -> Path:
    """``graphs_dir / name`` for a valid graph name (else :class:`GraphNameError`)."""
    return graphs_dir / check_graph_name(name)


def is_file_name(name: object) -> bool:
    """True when ``name`` is one safe page file segment (``json.md``; never ``../x``, ``a/b``, ``.x``)."""
    return isinstance(name, str) and FILE_NAME.fullmatch(name) is not None and name not in (".", "..")


def inside(folder: Path, path: Path) -> bool:
    """True when ``path``, with every symlink resolved, lies strictly inside ``folder`` (resolved too)."""
    base = os.path.realpath(folder)
    target = os.path.realpath(path)
    return target != base and os.path.commonpath([base, target]) == base


def ensure_inside(folder: Path, path: Path, what: str) -> Path:
    """``path`` when :func:`inside` ``folder``; else :class:`UnsafePathError` naming both."""
    if not inside(folder, path):
        raise UnsafePathError(f"{what} {path} is not inside {folder}: refused")
    return path


#: A page file's stem is cut here: the name stays well under 255 bytes with ``-N.md`` added.
MAX_STEM = 120


def unique_file_name(stem: str, taken: set[str], reserved: frozenset[str] = frozenset()) -> str:
    """``<stem>.md``, or ``<stem>-N.md`` for the first N free in ``taken`` (case-folded names, updated).

    ``stem`` comes from a URL (:func:`skillgraph.urls.file_stem_for`): cut to
    :data:`MAX_STEM`, and replaced by ``page`` when it is not a safe segment,
    so whatever a site's links hold, the name is one segment inside its folder
    and distinct from every other even where the disk ignores case.
    """
    stem = stem[:MAX_STEM]
    if not is_file_name(stem + ".md"):
        stem = "page"
    name, n = f"{stem}.md", 1
    while name.casefold() in taken or name.casefold() in reserved:
        n += 1
        name = f"{stem}-{n}.md"
    taken.add(name.casefold())
    return name
