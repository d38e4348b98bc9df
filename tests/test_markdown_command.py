"""``scrapy markdown FILE.html [...] [-o DIR]``, run as a real subprocess in the project."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "extract"


def scrapy_markdown(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "scrapy", "markdown", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def test_single_file_to_stdout() -> None:
    proc = scrapy_markdown(str(FIXTURES / "sphinx.html"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("# `json` — JSON encoder and decoder\n")
    assert "**`json.dumps(obj, *, skipkeys=False, **kw)`**" in proc.stdout
    assert "[`str`](stdtypes.html#str)" in proc.stdout, "without --url relative links stay relative"
    assert "¶" not in proc.stdout and "Sidebar Table Entry" not in proc.stdout
    assert proc.stderr == ""


def test_url_option_makes_links_absolute() -> None:
    proc = scrapy_markdown("--url", "https://docs.python.org/3/library/json.html", str(FIXTURES / "sphinx.html"))
    assert proc.returncode == 0, proc.stderr
    assert "[`str`](https://docs.python.org/3/library/stdtypes.html#str)" in proc.stdout
    assert "[conversion table](#py-to-json-table)" in proc.stdout


def test_several_files_into_a_directory(tmp_path: Path) -> None:
    out = tmp_path / "md"
    other = tmp_path / "other"
    other.mkdir()
    twin = other / "sphinx.html"
    twin.write_bytes((FIXTURES / "sphinx.html").read_bytes())
    files = [FIXTURES / "sphinx.html", FIXTURES / "docusaurus.html", twin]
    proc = scrapy_markdown(*map(str, files), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["docusaurus.md", "sphinx-2.md", "sphinx.md"]
    assert proc.stdout.split() == [str(out / "sphinx.md"), str(out / "docusaurus.md"), str(out / "sphinx-2.md")]
    assert (out / "docusaurus.md").read_text().startswith("# Configuration\n")
    assert (out / "sphinx.md").read_text() == (out / "sphinx-2.md").read_text()


def test_usage_errors_and_missing_files(tmp_path: Path) -> None:
    proc = scrapy_markdown(str(FIXTURES / "sphinx.html"), str(FIXTURES / "vitepress.html"))
    assert proc.returncode != 0 and "-o DIR" in proc.stderr
    proc = scrapy_markdown()
    assert proc.returncode != 0
    proc = scrapy_markdown(str(tmp_path / "nope.html"), str(FIXTURES / "vitepress.html"), "-o", str(tmp_path / "o"))
    assert proc.returncode == 1 and "nope.html" in proc.stderr
    assert (tmp_path / "o" / "vitepress.md").exists(), "the other files are still converted"


def test_needs_the_project(tmp_path: Path) -> None:
    proc = scrapy_markdown(str(FIXTURES / "sphinx.html"), cwd=tmp_path)
    assert proc.returncode != 0


def test_binary_input_is_refused_in_one_line(tmp_path: Path) -> None:
    """Issue 14: random bytes are not a page (no mojibake on stdout); the other files still convert."""
    noise = tmp_path / "noise.html"
    noise.write_bytes(bytes(range(256)) * 40)
    proc = scrape_markdown_quiet(str(noise))
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        f"error: {noise} is not an HTML or text file (binary data (NUL bytes)); nothing written"]
    png = tmp_path / "logo.html"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(1, 256)) * 8)
    out = tmp_path / "out"
    proc = scrape_markdown_quiet(str(png), str(FIXTURES / "sphinx.html"), "-o", str(out))
    assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1 and "logo.html" in proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["sphinx.md"]


def test_written_files_are_0644_and_missing_files_one_line(tmp_path: Path) -> None:
    import stat

    out = tmp_path / "out"
    proc = scrape_markdown_quiet(str(FIXTURES / "sphinx.html"), str(tmp_path / "nope.html"), "-o", str(out))
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [f"error: {tmp_path / 'nope.html'}: No such file or directory"]
    assert stat.S_IMODE((out / "sphinx.md").stat().st_mode) == 0o644


def scrape_markdown_quiet(*args: str) -> subprocess.CompletedProcess[str]:
    proc = scrapy_markdown(*args)
    assert "Traceback" not in proc.stderr
    return proc


def test_not_text_tells_legacy_encodings_from_random_high_bytes() -> None:
    """Bytes that are not UTF-8 are text only if they space their words: latin-1 prose and Shift-JIS
    HTML are, random bytes without control characters (which decode to pages of mojibake) are not."""
    import random

    from skillgraph.commands.markdown import not_text

    rng = random.Random(14)
    assert not_text(bytes(rng.randrange(128, 256) for _ in range(4096))).startswith("not UTF-8 nor text")
    assert not_text(bytes(rng.randrange(32, 256) for _ in range(4096))).startswith("not UTF-8 nor text")
    assert not_text("Crème brûlée, café au lait: a page of words. ".encode("latin-1") * 40) == ""
    assert not_text("<html><body><p>日本語のページです。</p>\n</body></html>\n".encode("shift_jis") * 40) == ""
    assert not_text(("ü" * 40000).encode()) == "", "UTF-8 without spaces is still text"
    cut = ("ü" * 32767 + "a" + "ü" * 10).encode()  # a two-byte character split by the 64 KB sniffing window
    assert len(cut) > 65536 and not_text(cut) == ""
    assert not_text(b"caf\xe9") == "", "too short to judge an encoding"
