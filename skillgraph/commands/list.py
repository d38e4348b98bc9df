"""``scrapy list``: every spider with its domain tag, ``name<TAB>domain`` per line.

Overrides Scrapy's own ``list`` (a project command of the same name wins), so
scripts that read the first column keep working. The generic ``docs`` spider
has no domain of its own and shows ``-``.

Under scrapyd (run as ``python -m scrapyd.runner list``) names only are printed: scrapyd's
``listspiders.json`` and ``schedule.json`` take each line as a spider name.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, ClassVar

from scrapy.commands import ScrapyCommand
from scrapy.spiderloader import get_spider_loader

if TYPE_CHECKING:
    import argparse


def under_scrapyd() -> bool:
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return getattr(spec, "name", "") == "scrapyd.runner"


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings: ClassVar[dict[str, Any]] = {"LOG_ENABLED": False}

    def short_desc(self) -> str:
        return "List available spiders with their domain (name<TAB>domain)"

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        loader = get_spider_loader(self.settings)
        names_only = under_scrapyd()
        for name in sorted(loader.list()):
            if names_only:
                print(name)
                continue
            domain = getattr(loader.load(name), "domain", "") or "-"
            print(f"{name}\t{domain}")
