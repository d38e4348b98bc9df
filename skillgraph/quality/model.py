"""The quality gates' result types (public: the pipeline and the tier ladder use them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PASS, WARN, FAIL = "pass", "warn", "fail"


@dataclass(frozen=True)
class Check:
    """One gate's verdict on a page."""

    status: str  #: "pass" | "warn" | "fail"
    detail: str  #: why, for people (logs, ``scrapy assess``, sources.json warnings)
    score: float  #: 0..1, this check's contribution to the composite score

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "detail": self.detail, "score": round(self.score, 3)}


@dataclass(frozen=True)
class Assessment:
    """Every check on one page, combined."""

    score: float  #: 0..1 composite (see docs/quality.md)
    passed: bool  #: ``score >= threshold and block is None``
    checks: dict[str, Check]  #: "block", "completeness", "boilerplate"
    block: str | None  #: a block label (``cloudflare-challenge``, ``not-found``...) or None

    def failed(self) -> list[str]:
        """Names of the checks that failed, in order."""
        return [name for name, check in self.checks.items() if check.status == FAIL]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Assessment:
        """The assessment :meth:`to_json` wrote (scores at its 3 decimals)."""
        checks = {name: Check(c["status"], c["detail"], float(c["score"])) for name, c in data["checks"].items()}
        return cls(float(data["score"]), bool(data["passed"]), checks, data.get("block"))

    def to_json(self) -> dict[str, Any]:
        return {
            "score": round(self.score, 3),
            "passed": self.passed,
            "checks": {name: check.to_json() for name, check in self.checks.items()},
            "block": self.block,
        }
