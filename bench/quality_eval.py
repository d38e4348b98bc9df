"""Evaluate the quality gates: block recall by class, false positives on every docs set, cost.

    .venv/bin/python bench/quality_eval.py [--check] [--json] [--sets ci|all] [--show-heldout]

* **labelled pages**: every page of ../shared/corpus/block_pages/ and tests/fixtures/quality/
  must get the label pinned in bench/quality_thresholds.json, at status 200 (a soft block)
  and at the status it is served with;
* **recall by class**: tests/fixtures/quality/classes/ (MANIFEST.tsv: class, label, status,
  split) holds block pages of each class (challenges of every era, soft 404s, login walls,
  paywalls, rate limits) and thin docs pages that *talk about* them, written by us. Each is
  assessed at 200 and at its served status; recall = blocked / pages, per class and per
  split (``design``: looked at while designing; ``heldout``: measured after). Failures of
  the held-out split are listed only with ``--show-heldout``;
* **false positives on real docs**: every page of every Debian documentation set in
  ``DOCS_SETS`` (``--sets ci``: the packages CI installs; ``--sets all``: the others too,
  when installed) and ../shared/corpus/doc_html/ is extracted and assessed as the crawl
  does; none may get a block label, except the sets' own 404 pages (``real_soft_404``),
  which must. Only the Python docs pages listed in ``allowed_below_threshold`` may score
  below the threshold;
* **cost**: CPU ms/page of ``assess(html, markdown=..., title=...)`` (the pipeline's call)
  against ms/page of the extractor alone, measured on the same pages in the same run; the
  ratio is what is pinned, never a wall-clock time (CPU time of this process, so a loaded
  machine does not skew it).

``--check`` exits 1 on any regression against the pinned figures, and names the Debian
package to install when a pinned docs set is missing (trafilatura's ``tests/eval_gate.py``
is the model).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from skillgraph.extract import extract_html  # noqa: E402
from skillgraph.quality import assess  # noqa: E402

CORPUS = (ROOT.parent / "shared" / "corpus").resolve()
FIXTURES = ROOT / "tests" / "fixtures" / "quality"
CLASSES = FIXTURES / "classes"
PYTHON_DOCS = Path("/usr/share/doc/python3.11/html")
THRESHOLDS = Path(__file__).with_name("quality_thresholds.json")

#: Docs sets CI installs (.ci/apt-packages.txt): name -> (Debian package, folders).
CI_SETS: dict[str, tuple[str, tuple[str, ...]]] = {
    "python": ("python3.11-doc", ("/usr/share/doc/python3.11/html",)),
    "postgresql": ("postgresql-doc-15", ("/usr/share/doc/postgresql-doc-15/html",)),
    "doxygen": ("doxygen-doc", ("/usr/share/doc/doxygen/html",)),
    "mkdocs": ("mkdocs-doc", ("/usr/share/doc/mkdocs/html",)),
    "sphinx": ("sphinx-doc", ("/usr/share/doc/sphinx-doc/html",)),
    "flask": ("python-flask-doc", ("/usr/share/doc/python-flask-doc/html",)),
    "m4": ("m4-doc", ("/usr/share/doc/m4",)),
    "gettext": ("gettext-doc", ("/usr/share/doc/gettext",)),
    "json-glib": ("libjson-glib-doc", ("/usr/share/doc/json-glib-1.0",)),
    "nodejs": ("nodejs-doc", ("/usr/share/doc/nodejs/api",)),
    "glib": ("libglib2.0-doc", ("/usr/share/gtk-doc/html/glib", "/usr/share/gtk-doc/html/gio",
                                "/usr/share/gtk-doc/html/gobject")),
}
#: The other sets BENCHMARKS.md's extraction section measures (big, or not installed by CI).
MORE_SETS: dict[str, tuple[str, tuple[str, ...]]] = {
    "docutils": ("docutils-doc", ("/usr/share/doc/docutils-doc",)),
    "requests": ("python-requests-doc", ("/usr/share/doc/python-requests-doc/html",)),
    "libtasn1": ("libtasn1-doc", ("/usr/share/gtk-doc/html/libtasn1",)),
    "git": ("git-doc", ("/usr/share/doc/git-doc",)),
    "aspell": ("aspell-doc", ("/usr/share/doc/aspell-doc",)),
    "django": ("python-django-doc", ("/usr/share/doc/python-django-doc/html",)),
    "commons-lang3": ("libcommons-lang3-java-doc", ("/usr/share/doc/libcommons-lang3-java/api",)),
    "cmake": ("cmake-doc", ("/usr/share/doc/cmake-data/html",)),
    "pytest": ("python-pytest-doc", ("/usr/share/doc/python-pytest-doc/html",)),
    "asciidoctor": ("asciidoctor-doc", ("/usr/share/doc/asciidoctor-doc/html",)),
    "cryptography": ("python-cryptography-doc", ("/usr/share/doc/python-cryptography-doc/html",)),
    "qt5": ("qtbase5-doc-html", ("/usr/share/qt5/doc",)),
    "erlang": ("erlang-doc", ("/usr/share/doc/erlang-doc",)),
    "ghc": ("ghc-doc", ("/usr/share/doc/ghc-doc/html",)),
    "rust": ("rust-doc", ("/usr/share/doc/rust-doc/html",)),
    # Installed on the development machine with the others (gtk-doc generated, like GLib's).
    "gtk3": ("libgtk-3-doc", ("/usr/share/gtk-doc/html/gtk3", "/usr/share/gtk-doc/html/gdk3")),
    "cairo": ("libcairo2-doc", ("/usr/share/gtk-doc/html/cairo",)),
    "libxml2": ("libxml2-doc", ("/usr/share/gtk-doc/html/libxml2",)),
}


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


def manifest() -> list[dict[str, str]]:
    """The rows of tests/fixtures/quality/classes/MANIFEST.tsv (``#`` lines are comments)."""
    lines = [line for line in (CLASSES / "MANIFEST.tsv").read_text().splitlines() if line and line[0] != "#"]
    header = lines[0].split("\t")
    return [dict(zip(header, line.split("\t"), strict=True)) for line in lines[1:]]


def classes(show_heldout: bool) -> tuple[dict[str, dict[str, dict[str, int]]], list[str]]:
    """Per class and split: pages, pages right at 200 (blocked; docs: not blocked), exact labels, right at status."""
    table: dict[str, dict[str, dict[str, int]]] = {}
    errors = []
    for row in manifest():
        html = read(CLASSES / row["file"])
        want = row["label"] or None
        cell = table.setdefault(row["class"], {}).setdefault(row["split"], {"pages": 0, "right": 0, "exact": 0,
                                                                            "right_at_status": 0})
        cell["pages"] += 1
        url = f"https://docs.example.org/{row['file']}"
        soft = assess(html, status=200, url=url)
        served = assess(html, status=int(row["status"]), url=url)
        right = (soft.block is not None) if want else (soft.block is None)
        cell["right"] += right
        cell["exact"] += soft.block == want
        cell["right_at_status"] += (served.block is not None) if want else (served.block is None)
        if soft.block != want and (row["split"] == "design" or show_heldout):
            errors.append(f"classes/{row['file']} ({row['split']}) @ 200: got {soft.block!r}, want {want!r}: "
                          f"{soft.checks['block'].detail}")
    return table, errors


def set_pages(folders: tuple[str, ...]) -> Iterator[Path]:
    for folder in folders:
        yield from sorted(p for p in Path(folder).rglob("*") if p.suffix in (".html", ".htm") and p.is_file())


def docs_sets(wanted: dict[str, tuple[str, tuple[str, ...]]]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Every page of every installed set in ``wanted``; the missing ones by package."""
    results: dict[str, dict[str, Any]] = {}
    missing = []
    for name, (package, folders) in wanted.items():
        if not all(Path(folder).is_dir() for folder in folders):
            missing.append(f"{name} ({package})")
            continue
        results[name] = measure(list(set_pages(folders)))
    if CORPUS.is_dir():
        results["corpus-doc_html"] = measure(sorted((CORPUS / "doc_html").rglob("*.html")))
    return results, missing


def measure(pages: list[Path]) -> dict[str, Any]:
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
            flagged.append((str(path), result.block, result.checks["block"].detail))
        elif not result.passed:
            name = str(path.relative_to(PYTHON_DOCS)) if path.is_relative_to(PYTHON_DOCS) else str(path)
            below.append(f"{name}: {result.score:.2f} ({result.checks['completeness'].detail})")
    return {"pages": len(pages), "flagged": flagged, "below_threshold": below, "extract_s": extract_s,
            "assess_s": assess_s}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 on a regression against the pinned figures")
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    parser.add_argument("--sets", choices=("ci", "all"), default="ci",
                        help="docs sets: those CI installs (default), or every set BENCHMARKS.md measures")
    parser.add_argument("--show-heldout", action="store_true", help="list the held-out split's failures too")
    args = parser.parse_args()
    pinned = json.loads(THRESHOLDS.read_text())
    if not PYTHON_DOCS.is_dir():
        print(f"{PYTHON_DOCS} missing: install Debian's python3.11-doc", file=sys.stderr)
        return 2
    right, total, label_errors = labelled(pinned)
    by_class, class_errors = classes(args.show_heldout)
    wanted = CI_SETS if args.sets == "ci" else {**CI_SETS, **MORE_SETS}
    sets, missing = docs_sets(wanted)
    soft_404 = pinned["real_soft_404"]
    false_positives = [f"{path}: {label} ({detail})" for result in sets.values()
                       for path, label, detail in result["flagged"] if path not in soft_404]
    soft_found = {path: label for result in sets.values() for path, label, _ in result["flagged"] if path in soft_404}
    # Only the Python docs' and the corpus's thin pages are pinned (the other sets' are counted, not gated).
    below = [line for name in ("python", "corpus-doc_html") for line in sets.get(name, {}).get("below_threshold", [])]
    pages = sum(result["pages"] for result in sets.values())
    extract_s = sum(result["extract_s"] for result in sets.values())
    assess_s = sum(result["assess_s"] for result in sets.values())
    ratio = assess_s / extract_s if extract_s else 0.0
    accuracy = right / total if total else 0.0
    summary = {
        "labelled": total, "label_accuracy": round(accuracy, 4),
        "classes": by_class,
        "docs_sets": {name: {"pages": r["pages"], "flagged": sum(p not in soft_404 for p, _, _ in r["flagged"]),
                             "assess_ms": round(1000 * r["assess_s"] / max(1, r["pages"]), 3),
                             "extract_ms": round(1000 * r["extract_s"] / max(1, r["pages"]), 3)}
                      for name, r in sets.items()},
        "docs_sets_missing": missing,
        "docs_pages": pages, "docs_flagged": len(false_positives), "real_soft_404_found": len(soft_found),
        "docs_below_threshold": len(below),
        "extract_ms_per_page": round(1000 * extract_s / max(1, pages), 3),
        "assess_ms_per_page": round(1000 * assess_s / max(1, pages), 3), "assess_to_extract": round(ratio, 3),
    }
    if args.json:
        print(json.dumps(summary))
    else:
        report(summary, label_errors + class_errors + false_positives + below)
    if not args.check:
        return 0
    failures = gate(summary, pinned, below, soft_found, args.sets)
    for failure in failures:
        print("REGRESSION: " + failure, file=sys.stderr)
    return 1 if failures else 0


def report(summary: dict[str, Any], problems: list[str]) -> None:
    print(f"labels:   {summary['label_accuracy']:.1%} of {summary['labelled']} right on block pages and fixtures, "
          "each at 200 and at its status")
    print("classes (recall at 200 / exact label / recall at served status; docs: not blocked):")
    for name, splits in sorted(summary["classes"].items()):
        cells = [f"{split} {c['right']}/{c['pages']} exact {c['exact']} at-status {c['right_at_status']}"
                 for split, c in sorted(splits.items())]
        print(f"  {name:11} " + "; ".join(cells))
    print(f"docs:     {summary['docs_pages']} pages, {summary['docs_flagged']} flagged as blocked, "
          f"{summary['real_soft_404_found']} real 404 pages found, {summary['docs_below_threshold']} Python pages "
          "below the threshold")
    for name, result in summary["docs_sets"].items():
        print(f"  {name:15} {result['pages']:6} pages, {result['flagged']} flagged, assess {result['assess_ms']:.3f} "
              f"ms/page, extractor {result['extract_ms']:.3f} ms/page")
    if summary["docs_sets_missing"]:
        print("  not installed: " + ", ".join(summary["docs_sets_missing"]))
    print(f"cost:     assess {summary['assess_ms_per_page']:.3f} ms/page, extractor "
          f"{summary['extract_ms_per_page']:.3f} ms/page, ratio {summary['assess_to_extract']:.3f}")
    for line in problems:
        print("  " + line)


def gate(summary: dict[str, Any], pinned: dict[str, Any], below: list[str], soft_found: dict[str, str],
         sets: str) -> list[str]:
    failures = []
    if summary["label_accuracy"] < pinned["min_label_accuracy"]:
        failures.append(f"label accuracy {summary['label_accuracy']:.3f} < {pinned['min_label_accuracy']}")
    for name, splits in pinned["class_recall"].items():
        for split, minimum in splits.items():
            cell = summary["classes"].get(name, {}).get(split)
            if cell is None:
                failures.append(f"class {name} ({split}): no pages")
            elif cell["right"] / cell["pages"] < minimum:
                failures.append(f"class {name} ({split}): {cell['right']}/{cell['pages']} < {minimum}")
    if summary["docs_flagged"] > pinned["max_docs_flagged"]:
        failures.append(f"{summary['docs_flagged']} docs pages flagged > {pinned['max_docs_flagged']}")
    wanted = CI_SETS if sets == "ci" else {**CI_SETS, **MORE_SETS}
    for path, label in pinned["real_soft_404"].items():
        if any(path.startswith(folder) for _, folders in wanted.values() for folder in folders) \
                and Path(path).exists() and soft_found.get(path) != label:
            failures.append(f"{path}: a docs set's own 404 page, want {label!r}, got {soft_found.get(path)!r}")
    missing_ci = [m for m in summary["docs_sets_missing"] if m.split(" ")[0] in CI_SETS]
    if missing_ci:
        failures.append("docs sets missing (apt-get install them): " + ", ".join(missing_ci))
    allowed = set(pinned["allowed_below_threshold"])
    new_below = [line for line in below if line.split(":")[0] not in allowed]
    if new_below:
        failures.append(f"{len(new_below)} docs pages newly below the threshold: {', '.join(new_below)}")
    if summary["assess_to_extract"] > pinned["max_assess_ratio"]:
        failures.append(f"assess/extract cost ratio {summary['assess_to_extract']:.3f} > {pinned['max_assess_ratio']}")
    return failures


if __name__ == "__main__":
    sys.exit(main())
