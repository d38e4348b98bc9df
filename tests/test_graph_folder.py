"""GraphFolder: llms.txt, llms-full.txt and sources.json written a page at a time, byte for byte as before."""

from __future__ import annotations

import logging
import stat
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from skillgraph.files import write_json_atomic
from skillgraph.graph.folder import GraphFolder
from skillgraph.graph.llms import PageTexts, llms_full, llms_index, write_graph_llms

ORIGIN = "https://docs.example.org/docs/"
PAGES = [
    ("", "Example docs", "# Example docs\n\nWelcome to the **Example** documentation, start here.\n"),
    ("guide/install.html", "Install", "# Install\n\n```bash\npip install example\n```\n\nInstall it with pip, then "
                                      "[configure](config.html) it.\n"),
    ("reference/cli.html", "", "# The `example` CLI\n\nEvery flag of the command line tool, explained: ünïcode.\n"),
    ("faq.html", "FAQ", "\n\n"),
]


def folder_with_pages(tmp_path: Path, pages: list[tuple[str, str, str]] = PAGES
                      ) -> tuple[GraphFolder, list[dict[str, Any]], dict[str, str]]:
    folder = GraphFolder(tmp_path / "graphs", "example")
    records, titles = [], {}
    for path, title, markdown in pages:
        url = ORIGIN + path
        file = folder.claim(url, ORIGIN)
        folder.write_now(file, markdown)
        records.append({"url": url, "file": file, "sha256": "x", "fetched_at": "2026-12-02T00:00:00Z",
                        "tier": "html", "quality": 0.9})
        titles[url] = title
    return folder, records, titles


def write_llms(folder: GraphFolder, records: list[dict[str, Any]], titles: dict[str, str],
               summary: str | None) -> None:
    folder.finish(records, titles, {}, {}, summary, local_links=False)


@pytest.mark.parametrize("summary", [None, "Documentation of the example"])
def test_streamed_llms_files_are_those_built_in_memory(tmp_path: Path, summary: str | None) -> None:
    folder, records, titles = folder_with_pages(tmp_path)
    write_llms(folder, records, titles, summary)
    pairs = [({**p, "title": titles[p["url"]]}, markdown) for p, (_, _, markdown) in zip(records, PAGES, strict=True)]
    assert (folder.staging / "llms.txt").read_text() == llms_index("example", pairs, summary)
    assert (folder.staging / "llms-full.txt").read_text() == llms_full(pairs)
    expected = summary or "4 pages of documentation from https://docs.example.org/docs/, as markdown."
    assert f"\n> {expected}\n" in (folder.staging / "llms.txt").read_text()
    for name in ("llms.txt", "llms-full.txt"):
        assert stat.S_IMODE((folder.staging / name).stat().st_mode) == 0o644
    assert not [p for p in folder.staging.iterdir() if p.name.endswith(".tmp")]


def test_a_missing_page_file_is_left_out_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    folder, records, titles = folder_with_pages(tmp_path)
    (folder.staging / records[1]["file"]).unlink()
    with caplog.at_level(logging.WARNING):
        write_llms(folder, records, titles, None)
    assert records[1]["file"] not in (folder.staging / "llms.txt").read_text()
    assert "url: " + records[1]["url"] + "\n" not in (folder.staging / "llms-full.txt").read_text()
    assert f"page file {records[1]['file']} is missing" in caplog.text


def test_sources_json_is_written_as_write_json_atomic_writes_it(tmp_path: Path) -> None:
    folder, records, _ = folder_with_pages(tmp_path)
    sources = {"name": "example", "pages": records, "skipped": [], "truncated": None, "note": "ünïcode"}
    folder.commit(sources)
    expected = tmp_path / "expected.json"
    write_json_atomic(expected, sources)
    assert (folder.live / "sources.json").read_bytes() == expected.read_bytes()
    assert stat.S_IMODE((folder.live / "sources.json").stat().st_mode) == 0o644


def test_page_texts_reads_each_page_when_asked(tmp_path: Path) -> None:
    folder, records, titles = folder_with_pages(tmp_path)
    texts = PageTexts(folder.staging, records, titles)
    assert len(texts) == len(PAGES)
    assert texts[2] == ({**records[2], "title": ""}, PAGES[2][2])
    assert [page["url"] for page, _ in texts[1:3]] == [records[1]["url"], records[2]["url"]]
    assert [markdown for _, markdown in texts] == [markdown for _, _, markdown in PAGES]


def peak_of(write: Callable[[], None]) -> int:
    tracemalloc.start()
    try:
        write()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_llms_files_hold_one_page_in_memory_at_a_time(tmp_path: Path) -> None:
    big = [(f"p/{i}.html", f"Page {i}", f"# Page {i}\n\n{'Some prose of the page. ' * 1700}\n") for i in range(100)]
    folder, records, titles = folder_with_pages(tmp_path, big)  # 100 pages of ~40 kB: 4 MB of markdown
    peak = peak_of(lambda: write_graph_llms(folder.staging, "example", records, None, titles))
    assert (folder.staging / "llms-full.txt").stat().st_size > 4_000_000
    assert peak < 1_000_000, peak  # a few copies of one page, not of the graph
    whole = peak_of(lambda: llms_full(list(PageTexts(folder.staging, records, titles))).encode())
    assert whole > 10 * peak, (whole, peak)  # what holding the graph's markdown at once costs
