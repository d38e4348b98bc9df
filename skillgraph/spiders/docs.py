"""``scrapy crawl docs -a url=URL [-a graph=NAME] [-a scope=URL]``: any documentation site."""

from __future__ import annotations

from typing import Any

from skillgraph.spiders.base import SkillgraphSpider
from skillgraph.urls import default_graph_name


class DocsSpider(SkillgraphSpider):
    """The generic spider: the graph is named after the host (plus ``_PORT``) unless ``graph`` is given."""

    name = "docs"

    def __init__(self, url: str | None = None, graph: str | None = None, **kwargs: Any) -> None:
        if not url:
            raise ValueError("the docs spider needs -a url=URL")
        super().__init__(graph=graph or default_graph_name(url), **kwargs)
        self.site_url = url
