"""One tier's try at a page, and the choice of the best try when every tier failed.

Attempts travel between the ladder's requests in ``request.meta`` (so a
request stays serialisable for JOBDIR and scrapy-redis queues): a short
summary of each failed try (``skillgraph_attempts``) and the whole best one
so far (``skillgraph_best``, the only one whose markdown is kept).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from skillgraph.markdown import fenced_blocks
from skillgraph.quality import Assessment


@dataclass
class Attempt:
    tier: str  #: html | negotiated | render
    url: str
    title: str
    markdown: str
    score: float
    block: str | None
    passed: bool
    why: str  #: the reason it failed ("" when it passed)
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    html: str | None = None  #: unused: no raw page travels past its response (kept for resumed JOBDIR meta)
    reextracted: str = ""  #: why the extractor gave up its first content element ("" when it did not)
    #: the quality gates' verdict on this markdown (``Assessment.to_json()``): the pipeline does not assess again
    assessment: dict[str, Any] | None = None

    @classmethod
    def assessed(cls, tier: str, url: str, title: str, markdown: str, assessment: Assessment, status: int,
                 headers: dict[str, str], veto: str = "") -> Attempt:
        """An attempt from an assessment; ``veto`` fails a page the gates passed (a CSR shell)."""
        why = veto or ("" if assessment.passed else describe(assessment))
        return cls(tier, url, title, markdown, round(assessment.score, 3), assessment.block,
                   assessment.passed and not veto, why, status, headers, assessment=assessment.to_json())

    @classmethod
    def failed(cls, tier: str, url: str, why: str, status: int = 0) -> Attempt:
        """A tier that produced nothing to assess (a non-markdown answer, a failed render)."""
        return cls(tier, url, "", "", 0.0, None, False, why, status)

    def summary(self) -> dict[str, Any]:
        """What the warning and the next request keep of a failed attempt."""
        return {"tier": self.tier, "score": self.score, "block": self.block, "status": self.status, "why": self.why}

    def to_meta(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_meta(cls, data: dict[str, Any] | None) -> Attempt | None:
        return cls(**data) if data else None

    @property
    def usable(self) -> bool:
        """Could be written as best effort: not a block page, and has content."""
        return self.block is None and bool(self.markdown.strip())


def describe(assessment: Assessment) -> str:
    if assessment.block:
        return f"blocked ({assessment.block}): {assessment.checks['block'].detail}"
    failed = assessment.failed() or [n for n, c in assessment.checks.items() if c.status != "pass"]
    details = "; ".join(f"{name}: {assessment.checks[name].detail}" for name in failed)
    return f"score {assessment.score:.2f}" + (f" ({details})" if details else "")


def better(current: Attempt | None, candidate: Attempt) -> Attempt | None:
    """The best usable attempt: highest score; on a tie the earlier (cheaper) tier stays."""
    if not candidate.usable:
        return current
    if current is None or candidate.score > current.score:
        return candidate
    return current


def next_tier_meta(meta: dict[str, Any], tier: str, follows: bool, attempts: list[dict[str, Any]],
                   best: Attempt | None, code_blocks: int, render_skip: str) -> dict[str, Any]:
    """The meta of the request for ``tier`` of the page whose response had ``meta`` (serialisable)."""
    carried = {k: v for k, v in meta.items() if k in ("skillgraph_link", "skillgraph_title", "skillgraph_follow")}
    if follows:
        carried["skillgraph_follow"] = True
    return {
        **carried,
        "skillgraph_tier": tier,
        "skillgraph_attempts": attempts,
        "skillgraph_best": best.to_meta() if best else None,
        "skillgraph_code_blocks": code_blocks,
        "skillgraph_render_skip": render_skip,  # why a browser would show nothing more
        # A tier is the same page, not a link deeper: DEPTH_LIMIT must not drop it.
        "depth_reset": True,
        "skillgraph_depth": meta.get("skillgraph_depth", meta.get("depth", 0)),
        "handle_httpstatus_all": True,  # every answer is examined, 404s included
        # the same URL again, on purpose: not "recently scraped", and never a 304
        "dont_recency": True,
        "dont_revalidate": True,
        # the html tier already had its retries (and Retry-After waits) for this URL
        "dont_retry": True,
    }


def code_fences_kept(markdown: str, html_code_blocks: int) -> str:
    """'' when the markdown keeps the code of the HTML page, else why not.

    Every fenced block must be closed by its own fence (one left open swallows the
    rest of the page, or of its list item or quote, as code), and there must be at
    least one fenced block per two ``<pre>`` blocks of the HTML (some ``<pre>`` are
    console output a converter may legitimately indent or merge).
    """
    blocks = fenced_blocks(markdown)
    if not all(block.closed for block in blocks):
        return "unbalanced code fences"
    needed = (html_code_blocks + 1) // 2
    if len(blocks) < needed:
        return f"{len(blocks)} fenced code block(s) for {html_code_blocks} in the HTML"
    return ""
