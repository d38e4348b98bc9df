"""The browser render tier: scrapy-playwright (default) or Splash, chosen by a setting.

Rendering is a *download handler* concern, never a callback one: the tier ladder
(``skillgraph.tiers``) asks for a render by request meta (:func:`render_meta`),
and the configured backend's handler or middleware does it inside Scrapy's
downloader, so robots.txt, retries, limits and stats apply as to any fetch.

* ``configure(settings)`` — called by the add-on: the handler/middlewares and
  the Playwright launch options for the chosen backend.
* ``RenderCheck`` — an extension that fails the crawl at start when the
  browser (or the Splash URL) is missing, instead of a crawl that quietly
  never renders.
* ``detect_shell`` — is this HTML an empty client-side-rendered app?

The names are loaded when first asked for: the page workers read
:mod:`skillgraph.render.shell` without importing Scrapy through :mod:`.config`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skillgraph.render.config import RenderConfig, configure, render_meta
    from skillgraph.render.shell import Shell, detect_shell

__all__ = ["RenderConfig", "Shell", "configure", "detect_shell", "render_meta"]
_HOMES = {"RenderConfig": "config", "configure": "config", "render_meta": "config", "Shell": "shell",
          "detect_shell": "shell"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
