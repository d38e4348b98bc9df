"""QualityGatePipeline: the last word on whether a document is real content.

The tier ladder (``skillgraph.tiers``) already assesses every HTML tier of a page
and degrades it; this gate runs :func:`skillgraph.quality.assess` once more on the
item as it will be written, so that every document, whatever spider or strategy
produced it, carries a ``quality`` score and no block page reaches a graph.

What the spider may leave in ``item.meta`` (all optional; the tier ladder fills them):

``response_status``   the HTTP status of the response the document came from (int)
``response_headers``  its headers, ``{name: value}`` (str)
``html``              the raw HTML (block signatures read the markup, not only the text)
``assessment``        the gates' verdict already reached on this very markdown (``Assessment.to_json()``):
                      the tier ladder assesses every HTML page once, in the page pool, and this gate
                      applies that verdict instead of assessing the page a second time
``tier_warned``       True when the ladder already sent this page's ``best-effort`` warning

It sets ``item.quality`` (the score, 3 decimals) and ``meta["quality_checks"]``
(``Assessment.to_json()``).

The rules (docs/quality.md):

* a block page raises :class:`BlockedPage` and sends ``build_warning(kind="blocked")``;
* a page below ``SKILLGRAPH_QUALITY_THRESHOLD`` raises :class:`LowQualityPage` and
  sends ``build_warning(kind="low-quality")``: never dropped silently;
* ``best-effort`` items are kept whatever the verdict, with a ``best-effort`` warning;
* ``corpus`` and ``markdown`` items (llms-full sections, ``.md`` twins) are never
  dropped for thin content or boilerplate: a short section is legitimate. They are
  dropped as blocked only on evidence from the response itself (a 4xx/5xx status,
  a decisive header, or the raw HTML in meta), never on their wording alone.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy.exceptions import DropItem, NotConfigured

from skillgraph.build import Build
from skillgraph.quality import DEFAULT_THRESHOLD, Assessment, assess

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

#: Tiers whose documents are not held to completeness and boilerplate.
LENIENT_TIERS = frozenset({"corpus", "markdown"})
STAT = "skillgraph/quality"


class BlockedPage(DropItem):
    """The document is a block page (challenge, CAPTCHA, login wall, 404, ...)."""


class LowQualityPage(DropItem):
    """The document's quality score is below the threshold."""


class QualityGatePipeline:
    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        if not settings.getbool("SKILLGRAPH_QUALITY_ENABLED", True):
            raise NotConfigured("SKILLGRAPH_QUALITY_ENABLED is off")
        self.threshold = settings.getfloat("SKILLGRAPH_QUALITY_THRESHOLD", DEFAULT_THRESHOLD)
        self.crawler = crawler
        assert crawler.stats is not None
        self.stats = crawler.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> QualityGatePipeline:
        return cls(crawler)

    def process_item(self, item: Any) -> Any:
        adapter = ItemAdapter(item)
        meta: dict[str, Any] | None = adapter.get("meta")
        if meta is None:
            meta = {}
            if "meta" in adapter.field_names():
                adapter["meta"] = meta
        url = str(adapter.get("url") or "")
        tier = str(adapter.get("tier") or "html")
        status = int(meta.get("response_status") or 200)
        headers = meta.get("response_headers") or None
        html = meta.get("html")
        known = meta.pop("assessment", None)
        if known:
            assessment = Assessment.from_json(known)
            self.stats.inc_value(f"{STAT}/reused")
        else:
            assessment = assess(html, markdown=str(adapter.get("markdown") or ""),
                                title=str(adapter.get("title") or ""), status=status, headers=headers, url=url,
                                threshold=self.threshold)
        adapter["quality"] = round(assessment.score, 3)
        meta["quality_checks"] = assessment.to_json()
        for name in assessment.failed():
            self.stats.inc_value(f"{STAT}/failed/{name}")
        if tier == "best-effort":
            return self._best_effort(item, url, assessment, meta)
        if assessment.block is not None:
            evidence = html is not None or status >= 400 or bool(headers)
            if tier not in LENIENT_TIERS or evidence:
                self.stats.inc_value(f"{STAT}/blocked/{assessment.block}")
                message = f"block page ({assessment.checks['block'].detail}), not written"
                self._warn("blocked", url, message, assessment.block)
                raise BlockedPage(f"{assessment.block}: {url}")
        elif not assessment.passed and tier not in LENIENT_TIERS:
            self.stats.inc_value(f"{STAT}/low_quality")
            self._warn("low-quality", url, f"quality {assessment.score:.2f} < {self.threshold}: {_why(assessment)}")
            raise LowQualityPage(f"quality {assessment.score:.2f} < {self.threshold}: {url}")
        if assessment.passed:
            self.stats.inc_value(f"{STAT}/passed")
        else:
            self.stats.inc_value(f"{STAT}/lenient/{tier}")
            logger.debug("Kept %s page %s below the gates (%s)", tier, url, _why(assessment))
        return item

    def _best_effort(self, item: Any, url: str, assessment: Assessment, meta: dict[str, Any]) -> Any:
        """Best-effort items are kept, never silently: the ladder's warning, or ours."""
        self.stats.inc_value(f"{STAT}/best_effort")
        if assessment.passed:
            self.stats.inc_value(f"{STAT}/passed")
        if not meta.get("tier_warned"):
            self._warn("best-effort", url, f"kept as best effort (quality {assessment.score:.2f}: "
                       f"{_why(assessment) or 'passed'})", assessment.block)
        return item

    def _warn(self, kind: str, url: str, message: str, label: str | None = None) -> None:
        self.stats.inc_value(f"{STAT}/warnings/{kind}")
        Build.of(self.crawler).warn(kind, url, f"quality gate: {message}", label)


def _why(assessment: Assessment) -> str:
    return "; ".join(f"{name}: {check.detail}" for name, check in assessment.checks.items()
                     if check.status != "pass")
