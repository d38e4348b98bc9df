"""Byte-identity guard of the extractor: its output on the project's own corpus, pinned page by page.

    .venv/bin/python bench/extract_identity.py            # compare with the pins; exit 1 on any difference
    .venv/bin/python bench/extract_identity.py --pin      # re-pin (after explaining every difference)
    .venv/bin/python bench/extract_identity.py --dump DIR # also write each page's output, to diff two trees

Speed work on the extractor must not change what it writes.  The fidelity gates
(``extract_eval.py``) would let a small change through (a score moves by 0.0001, or
not at all); this guard does not: for every page of the corpus it pins the sha256 of
the markdown, of the title, and of the verdict (generator, self-check status and
detail, re-extraction reason), and reports every page where one of them differs.

The corpus is the extractor's own: every page of the Python 3.11 docs
(``/usr/share/doc/python3.11/html``), ``tests/fixtures/extract/``,
``../shared/corpus/doc_html/``, and a fixed sample of each Debian doc set that
``extract_eval.py --fidelity all`` measures (the 25 pages it times, chosen by
``docs_fidelity.py``'s size-spread rule, and 25 more between them).  A set that is
not installed is reported as skipped, never as a difference; a page found that has
no pin (a package upgraded) is reported as new.  Each page is extracted from its
bytes, as the benchmark does, with a URL that does not depend on the checkout
(``https://docs.example/<set>/<path>``), so link resolution is exercised too.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from extract_eval import CORPUS, DOC_SETS, HELD_OUT_SETS, PYTHON_DOCS, UNSEEN_SETS  # noqa: E402

from skillgraph.extract import Extraction, extract_html  # noqa: E402

PINS = Path(__file__).with_name("extract_identity.json")
FIXTURES = ROOT / "tests" / "fixtures" / "extract"
#: Pages per Debian doc set: the benchmark's 25, and as many between them.
SAMPLE = 25
URL = "https://docs.example/{set}/{path}"


def spread(root: Path, sample: int) -> list[Path]:
    """``docs_fidelity.collect``'s pages of ``root`` (sorted by size, evenly spaced), and the pages halfway between.

    The rule is copied, not imported: the guard must not move when that tool changes.
    """
    found = sorted(f for f in root.rglob("*.htm*") if f.is_file() and f.suffix in (".html", ".htm", ".xhtml"))
    if len(found) <= 2 * sample:
        return found
    found = sorted(found, key=lambda f: (f.stat().st_size, str(f)))
    step = len(found) / sample
    picked = {int(i * step) for i in range(sample)} | {int((i + 0.5) * step) for i in range(sample)}
    return [found[i] for i in sorted(picked)]


def corpus() -> Iterator[tuple[str, Path | None, list[Path]]]:
    """(set name, its root or None when absent, its pages), in a fixed order."""
    yield "fixtures", FIXTURES, sorted(FIXTURES.glob("*.html"))
    doc_html = CORPUS / "doc_html"
    yield "doc_html", doc_html if doc_html.is_dir() else None, sorted(doc_html.glob("*/*.html"))
    python = PYTHON_DOCS if PYTHON_DOCS.is_dir() else None
    yield "python-docs", python, sorted(PYTHON_DOCS.rglob("*.html")) if python else []
    for name, root in {**DOC_SETS, **HELD_OUT_SETS, **UNSEEN_SETS}.items():
        if root == PYTHON_DOCS:
            continue  # every page of it is pinned above
        yield name, root if root.is_dir() else None, spread(root, SAMPLE) if root.is_dir() else []


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def verdict(result: Extraction) -> str:
    """What the extraction decided beside its text: family, self-check, re-extraction."""
    check = result.structure
    return f"{result.generator}|{check.status}|{check.detail}|{check.score}|{result.reextracted}"


def fingerprint(result: Extraction) -> dict[str, str]:
    """The pinned digests of one page (64 bits of sha256 each: a change, not an adversary, is what they catch)."""
    return {"markdown": _sha(result.markdown), "title": _sha(result.title), "verdict": _sha(verdict(result))}


def run(dump: Path | None = None) -> tuple[dict[str, dict[str, str]], list[str]]:
    """Every page's digests, keyed ``<set>/<path>``, and the sets that are not installed."""
    found: dict[str, dict[str, str]] = {}
    skipped: list[str] = []
    for name, root, pages in corpus():
        if root is None:
            skipped.append(name)
            continue
        for path in pages:
            rel = path.relative_to(root).as_posix()
            key = f"{name}/{rel}"
            result = extract_html(path.read_bytes(), URL.format(set=name, path=rel))
            found[key] = fingerprint(result)
            if dump is not None:
                out = dump / (key + ".md")
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_text(f"title: {result.title}\nverdict: {verdict(result)}\n\n{result.markdown}",
                               encoding="utf-8", errors="surrogatepass")
    return found, skipped


def compare(pinned: dict[str, dict[str, str]], found: dict[str, dict[str, str]],
            skipped: list[str]) -> list[str]:
    """One line per page whose output differs from its pin, or that has no pin, or that is pinned but gone."""
    lines = []
    for key, digests in found.items():
        pin = pinned.get(key)
        if pin is None:
            lines.append(f"new (no pin): {key}")
            continue
        differs = [part for part in ("markdown", "title", "verdict") if pin.get(part) != digests[part]]
        if differs:
            lines.append(f"differs ({', '.join(differs)}): {key}")
    absent = set(skipped)
    for key in pinned:
        if key not in found and key.split("/", 1)[0] not in absent:
            lines.append(f"pinned page not extracted: {key}")
    return lines


def write_pins(found: dict[str, dict[str, str]]) -> None:
    """One page per line, so that a re-pin's diff names the pages that moved."""
    rows = [f"  {json.dumps(key)}: {json.dumps(found[key], sort_keys=True)}" for key in sorted(found)]
    PINS.write_text("{\n" + ",\n".join(rows) + "\n}\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pin", action="store_true", help="write the digests found as the new pins")
    parser.add_argument("--dump", type=Path, default=None, help="write each page's title, verdict and markdown here")
    args = parser.parse_args(argv)
    found, skipped = run(args.dump)
    for name in skipped:
        print(f"skipped (not installed): {name}")
    if args.pin:
        write_pins(found)
        print(f"pinned {len(found)} pages to {PINS}")
        return 0
    pinned = json.loads(PINS.read_text(encoding="utf-8")) if PINS.exists() else {}
    lines = compare(pinned, found, skipped)
    for line in lines:
        print(line)
    print(f"{len(found)} pages extracted, {len(lines)} difference(s)")
    print("identity:", "FAIL" if lines else "PASS")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
