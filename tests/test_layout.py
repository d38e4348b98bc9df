"""The package layout (issue 23): no import circles, a short top level, every package says what it owns,
docs/architecture.md matches the tree, and old module paths users may have written still work."""

from __future__ import annotations

import ast
import importlib
import re
import sys
from pathlib import Path

import pytest

from skillgraph import MOVED
from tests.conftest import ROOT

PACKAGE = ROOT / "skillgraph"
#: the top level keeps the add-on, settings, items, signals and what every package shares
MAX_TOP_LEVEL_MODULES = 8


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Every skillgraph module ``name`` imports: at module level, inside functions, under TYPE_CHECKING alike
    (an import hidden in a function or behind TYPE_CHECKING still ties the two modules together)."""
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def nearest(module: str) -> str | None:
        while module and module not in known:
            module = module.rpartition(".")[0]
        return module or None

    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = nearest(alias.name)
                if target:
                    found.add(target)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package
                for _ in range(node.level - 1):
                    anchor = anchor.rpartition(".")[0]
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                target = f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else nearest(base)
                if target:
                    found.add(target)
    found.discard(name)
    return found


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def import_graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports_of(name, path, known) for name, path in known.items()}


def test_no_import_circles() -> None:
    assert circles(import_graph()) == []


def test_the_circle_check_finds_a_circle() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_the_import_reader_counts_imports_in_functions_and_under_type_checking(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from skillgraph.urls import join\n"
                      "def f():\n    from skillgraph import markdown\n")
    assert imports_of("skillgraph.x", source, modules()) == {"skillgraph.urls", "skillgraph.markdown"}


def test_the_top_level_keeps_only_a_few_modules_beside_the_packages() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top


def package_docstring(init: Path) -> str:
    return ast.get_docstring(ast.parse(init.read_text())) or ""


@pytest.mark.parametrize("init", sorted(PACKAGE.glob("*/__init__.py")), ids=lambda p: p.parent.name)
def test_every_package_says_what_it_owns(init: Path) -> None:
    doc = package_docstring(init)
    summary = doc.split("\n\n", 1)[0]
    assert len(summary.split()) >= 8, f"{init.parent.name}: its docstring's first paragraph says what it owns"


def test_the_architecture_page_names_every_package_and_only_modules_that_exist() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text()
    assert "docs/architecture.md" in (ROOT / "README.md").read_text(), "linked from the README"
    for init in PACKAGE.glob("*/__init__.py"):
        assert f"skillgraph/{init.parent.name}/" in page, f"{init.parent.name} is not on the page"
    cited = set(re.findall(r"skillgraph/[\w/]+\.py", page))
    assert len(cited) >= 20, "the page names the module of each step"
    missing = sorted(path for path in cited if not (ROOT / path).exists())
    assert missing == [], f"the page cites modules that do not exist: {missing}"


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_module_path_is_the_module_that_holds_its_code_now(old: str) -> None:
    assert importlib.import_module(old) is importlib.import_module(MOVED[old])
    assert sys.modules[old] is sys.modules[MOVED[old]]


def test_an_old_component_path_in_settings_loads_the_same_class() -> None:
    from scrapy.settings import Settings
    from scrapy.utils.misc import load_object

    assert load_object("skillgraph.queues.CompactFifoMemoryQueue") is \
        load_object("skillgraph.build.queues.CompactFifoMemoryQueue")
    settings = Settings({"SCHEDULER_MEMORY_QUEUE": "skillgraph.queues.CompactFifoMemoryQueue"})
    from skillgraph.addon import Addon

    Addon().update_settings(settings)  # the add-on's default sits below the user's old path
    assert load_object(settings["SCHEDULER_MEMORY_QUEUE"]).__module__ == "skillgraph.build.queues"


def test_no_code_of_the_project_uses_an_old_path() -> None:
    """The aliases are for what users wrote; the project itself names modules where they are."""
    old = set(MOVED)
    users = []
    for folder in ("skillgraph", "tests", "bench", "demo"):
        for path in (ROOT / folder).rglob("*.py"):
            if path == ROOT / "skillgraph" / "__init__.py" or path == Path(__file__):
                continue
            text = path.read_text()
            for node in ast.walk(ast.parse(text)):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
                users += [f"{path.relative_to(ROOT)}: {n}" for n in names if n in old]
            users += [f"{path.relative_to(ROOT)}: {m}" for m in re.findall(r"[\"'](skillgraph(?:\.\w+)+)[\"'.]", text)
                      if any(m == o or m.startswith(o + ".") for o in old)]
    assert users == []
