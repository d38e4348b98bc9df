"""Evaluate the quality gates: labels, false positives, and cost against the extractor.

    .venv/bin/python bench/quality_eval.py [--check] [--json]

* every page of ../shared/corpus/block_pages/ and tests/fixtures/quality/ must get the
  label pinned in bench/quality_thresholds.json, at status 200 (a soft block) and at
  the status it is served with;
* no page of the Python 3.11 docs (/usr/share/doc/python3.11/html) or of
  ../shared/corpus/doc_html/ may get a block label, and only the pages listed in
  ``allowed_below_threshold`` may score below the threshold;
* cost: ms/page of ``assess(html, markdown=..., title=...)`` (the pipeline's call)
  against ms/page of the extractor alone, measured on the same pages in the same run;
  the ratio is what is pinned, never a wall-clock time (CPU time of this process, so
  a loaded machine does not skew it).

``--check`` exits 1 on any regression against the pinned figures (trafilatura's
``tests/eval_gate.py`` is the model).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from skillgraph.extract import extract_html  # noqa: E402
from skillgraph.quality import assess  # noqa: E402

CORPUS = (ROOT.parent / "shared" / "corpus").resolve()
FIXTURES = ROOT / "tests" / "fixtures" / "quality"
PYTHON_DOCS = Path("/usr/share/doc/python3.11/html")
THRESHOLDS = Path(__file__).with_name("quality_thresholds.json")


def read(path: Path) -> str:
    return path.read_bytes().decode("utf-8", errors="replace")


def labelled(pinned: dict[str, Any]) -> tuple[int, int, list[str]]:
    """Assess each pinned page at status 200 and at its own status; count exact labels."""
    right = total = 0
    errors = []
    for group, folder in (("block_pages", CORPUS / "block_pages"), ("fixtures", FIXTURES)):
        for name, want in sorted(pinned[group].items()):
            html = read(folder / name)
            for status in sorted({200, want["status"]}):
                got = assess(html, status=status, url=f"https://example.org/{name}")
                total += 1
                if got.block == want["label"] and (want["label"] is not None or got.passed):
                    right += 1
                else:
                    errors.append(f"{group}/{name} @ {status}: got {got.block!r} (passed={got.passed}), "
                                  f"want {want['label']!r}: {got.checks['block'].detail}")
    return right, total, errors


def docs_pages() -> list[Path]:
    return sorted(PYTHON_DOCS.rglob("*.html")) + sorted((CORPUS / "doc_html").rglob("*.html"))


def docs(pages: list[Path]) -> dict[str, Any]:
    flagged, below = [], []
    extract_s = assess_s = 0.0
    for path in pages:
        html = read(path)
        url = path.as_uri()
        start = time.process_time()
        extraction = extract_html(html, url)
        middle = time.process_time()
        result = assess(html, markdown=extraction.markdown, title=extraction.title, url=url)
        extract_s += middle - start
        assess_s += time.process_time() - middle
        if result.block is not None:
            flagged.append(f"{path}: {result.block} ({result.checks['block'].detail})")
        elif not result.passed:
            name = str(path.relative_to(PYTHON_DOCS)) if path.is_relative_to(PYTHON_DOCS) else str(path)
            below.append(f"{name}: {result.score:.2f} ({result.checks['completeness'].detail})")
    n = max(1, len(pages))
    return {"pages": len(pages), "flagged": flagged, "below_threshold": below,
            "extract_ms": 1000 * extract_s / n, "assess_ms": 1000 * assess_s / n,
            "ratio": assess_s / extract_s if extract_s else 0.0}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 on a regression against the pinned figures")
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    args = parser.parse_args()
    pinned = json.loads(THRESHOLDS.read_text())
    if not PYTHON_DOCS.is_dir():
        print(f"{PYTHON_DOCS} missing: install Debian's python3.11-doc", file=sys.stderr)
        return 2
    right, total, label_errors = labelled(pinned)
    result = docs(docs_pages())
    accuracy = right / total if total else 0.0
    summary = {"labelled": total, "label_accuracy": round(accuracy, 4), "docs_pages": result["pages"],
               "docs_flagged": len(result["flagged"]), "docs_below_threshold": len(result["below_threshold"]),
               "extract_ms_per_page": round(result["extract_ms"], 2),
               "assess_ms_per_page": round(result["assess_ms"], 2), "assess_to_extract": round(result["ratio"], 3)}
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"labels:   {right}/{total} right ({accuracy:.1%}) on block pages and fixtures, "
              "each at 200 and at its status")
        print(f"docs:     {result['pages']} pages, {len(result['flagged'])} flagged as blocked, "
              f"{len(result['below_threshold'])} below the threshold")
        print(f"cost:     assess {result['assess_ms']:.2f} ms/page, extractor {result['extract_ms']:.2f} ms/page, "
              f"ratio {result['ratio']:.3f}")
        for line in label_errors + result["flagged"] + result["below_threshold"]:
            print("  " + line)
    if not args.check:
        return 0
    failures = []
    if accuracy < pinned["min_label_accuracy"]:
        failures.append(f"label accuracy {accuracy:.3f} < {pinned['min_label_accuracy']}")
    if len(result["flagged"]) > pinned["max_docs_flagged"]:
        failures.append(f"{len(result['flagged'])} docs pages flagged > {pinned['max_docs_flagged']}")
    allowed = set(pinned["allowed_below_threshold"])
    new_below = [line for line in result["below_threshold"] if line.split(":")[0] not in allowed]
    if new_below:
        failures.append(f"{len(new_below)} docs pages newly below the threshold: {', '.join(new_below)}")
    if result["ratio"] > pinned["max_assess_ratio"]:
        failures.append(f"assess/extract cost ratio {result['ratio']:.3f} > {pinned['max_assess_ratio']}")
    for failure in failures:
        print("REGRESSION: " + failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
