"""skillgraph: documentation sites to skill graphs (clean markdown + sources.json), on Scrapy.

A page's way through the packages is drawn in docs/architecture.md.

Old module paths keep working: issue 23 grouped the top-level modules into packages by concept. A
user's settings may name a component by the path it had (``SCHEDULER_MEMORY_QUEUE =
"skillgraph.queues.CompactFifoMemoryQueue"``), a script may import ``skillgraph.pagework``. Each old
path in :data:`MOVED` is an alias of the module that now holds the code: importing it gives that very
module object, so a class compares equal under both names and nothing is loaded twice. No code inside
skillgraph uses an old path (tests/test_layout.py checks); the aliases are for what users wrote.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from importlib.machinery import ModuleSpec
from types import ModuleType

#: old module path -> the module that holds its code now
MOVED: dict[str, str] = {
    "skillgraph.ledger": "skillgraph.build.ledger",
    "skillgraph.state": "skillgraph.build.state",
    "skillgraph.queues": "skillgraph.build.queues",
    "skillgraph.profiler": "skillgraph.strategy.profiler",
    "skillgraph.probes": "skillgraph.strategy.probes",
    "skillgraph.llms": "skillgraph.strategy.llms",
    "skillgraph.sitemaps": "skillgraph.strategy.sitemaps",
    "skillgraph.detect": "skillgraph.strategy.detect",
    "skillgraph.mediawiki": "skillgraph.strategy.mediawiki",
    "skillgraph.graph_folder": "skillgraph.graph.folder",
    "skillgraph.graph_links": "skillgraph.graph.links",
    "skillgraph.graph_llms": "skillgraph.graph.llms",
    "skillgraph.graph_sources": "skillgraph.graph.sources",
    "skillgraph.previous": "skillgraph.graph.previous",
    "skillgraph.pagework": "skillgraph.page.pool",
    "skillgraph.pages": "skillgraph.page.callbacks",
    "skillgraph.memtrim": "skillgraph.page.memtrim",
    "skillgraph.settings_check": "skillgraph.commands.settings_check",
    "skillgraph.distributed.redis_url": "skillgraph.distributed.connection",
    "skillgraph.distributed.buildkeys": "skillgraph.distributed.keys",
    "skillgraph.pipelines.pending": "skillgraph.pipelines.dual_write",
    "skillgraph.pipelines.graph_fleet": "skillgraph.pipelines.graph",
}


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old path and loads it as the module that now holds its code."""

    def find_spec(self, fullname: str, path: object = None, target: ModuleType | None = None) -> ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def __init__(self) -> None:
        self.specs: dict[str, ModuleSpec | None] = {}

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        module = importlib.import_module(MOVED[spec.name])  # the module itself, not a copy
        self.specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing runs again; the module's own ``__spec__`` (which the import system just set to the alias's)
        is put back, so ``find_spec`` and ``pkgutil`` still see the module where it is."""
        alias = module.__spec__.name if module.__spec__ is not None else ""
        module.__spec__ = self.specs.pop(alias, module.__spec__)


__version__ = "0.1.0"

if not any(isinstance(finder, MovedModules) for finder in sys.meta_path):
    sys.meta_path.append(MovedModules())
