"""Quality gates (public API): is a fetched page real content, and how good is it?

``assess(html, markdown=..., title=..., status=..., headers=...)`` runs three checks
(block-page detection, completeness, boilerplate), each pass / warn / fail with a
0..1 score, and combines them into an :class:`Assessment`. The item pipeline
(``skillgraph.pipelines.quality``), ``scrapy assess`` and the per-page tier ladder
all use it. docs/quality.md documents the checks, the labels and the score.
"""

from __future__ import annotations

from skillgraph.quality.assess import DEFAULT_THRESHOLD, assess
from skillgraph.quality.model import FAIL, PASS, WARN, Assessment, Check
from skillgraph.quality.signatures import LABELS, SIGNATURES, Signature

__all__ = [
    "DEFAULT_THRESHOLD",
    "FAIL",
    "LABELS",
    "PASS",
    "SIGNATURES",
    "WARN",
    "Assessment",
    "Check",
    "Signature",
    "assess",
]
