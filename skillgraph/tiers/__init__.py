"""Per-page tier degradation (``html`` -> ``negotiated`` -> ``render`` -> ``best-effort``).

``await TierLadder.of(spider).handle(response, link)`` is what the spider's
``html_document`` runs; ``TierErrorMiddleware`` turns a failed tier request
into a response the ladder can record and move past. docs/rendering.md
explains the flow, the settings and the stats.
"""

from __future__ import annotations

from skillgraph.tiers.attempt import Attempt, code_fences_kept
from skillgraph.tiers.ladder import TierLadder
from skillgraph.tiers.middleware import TierErrorMiddleware

__all__ = ["Attempt", "TierErrorMiddleware", "TierLadder", "code_fences_kept"]
