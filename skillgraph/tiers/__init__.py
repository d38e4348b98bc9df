"""Per-page tier degradation (``html`` -> ``negotiated`` -> ``render`` -> ``best-effort``).

``await TierLadder.of(spider).handle(response, link)`` is what the spider's
``html_document`` runs; ``TierErrorMiddleware`` turns a failed tier request
into a response the ladder can record and move past. docs/rendering.md
explains the flow, the settings and the stats.

The names are loaded when first asked for: the page workers read
:mod:`skillgraph.tiers.evaluate` and :mod:`.attempt` without importing Scrapy through the ladder.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skillgraph.tiers.attempt import Attempt, code_fences_kept
    from skillgraph.tiers.ladder import TierLadder
    from skillgraph.tiers.middleware import TierErrorMiddleware

__all__ = ["Attempt", "TierErrorMiddleware", "TierLadder", "code_fences_kept"]
_HOMES = {"Attempt": "attempt", "code_fences_kept": "attempt", "TierLadder": "ladder",
          "TierErrorMiddleware": "middleware"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
