"""``scrapy mcp``: an MCP server on stdio over the knowledge store and the skill graphs (docs/store.md).

Tools ``search``, ``read_page`` and ``list_graphs``, and resources
``skillgraph://{graph}/{file}`` (:mod:`skillgraph.store.mcp`). The store is
``SKILLGRAPH_STORE_URL``, the graphs ``SKILLGRAPH_GRAPHS_DIR``. stdout carries
the protocol only; the log goes to stderr (``-L INFO`` to see it; off by
default). Client configuration, e.g. for an agent's ``mcpServers``::

    {"skillgraph": {"command": "/path/to/skillgraph/.venv/bin/scrapy", "args": ["mcp"],
                    "cwd": "/path/to/skillgraph"}}
"""

from __future__ import annotations

import logging
from argparse import Namespace
from typing import Any, ClassVar

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

logger = logging.getLogger(__name__)


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings: ClassVar[dict[str, Any]] = {"LOG_LEVEL": "WARNING"}

    def short_desc(self) -> str:
        return "Serve search, read_page and list_graphs to agents over MCP (stdio)"

    def run(self, args: list[str], opts: Namespace) -> None:
        if args:
            raise UsageError("scrapy mcp takes no arguments (it speaks MCP on stdin/stdout)")
        assert self.settings is not None
        try:
            from skillgraph.store.mcp import SkillgraphTools, build_server
        except ImportError as exc:  # the mcp package is in requirements.txt
            raise UsageError(f"scrapy mcp needs the mcp package ({exc}): pip install -r requirements.txt") from exc
        tools = SkillgraphTools(self.settings)
        try:
            build_server(tools).run("stdio")
        except KeyboardInterrupt:
            pass
        finally:
            tools.close()
