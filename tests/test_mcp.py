"""``scrapy mcp``: a real MCP client (the SDK's stdio client) against the command, over a real store and graphs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from scrapy.settings import Settings

from bench.search_eval import document
from skillgraph.store.embed import load_embedder
from skillgraph.store.mcp import SkillgraphTools, ToolError, section
from skillgraph.store.sqlite import SqliteStore
from skillgraph.store.worker import StoreWorker, WorkerConfig

ROOT = Path(__file__).resolve().parent.parent
PAGES = ["json", "pprint", "pickle", "timeit", "csv", "shutil"]
GRAPH = "docs.python.org_3_library"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A store of six Python docs pages (the default embedder) and a graph holding five of them."""
    root = tmp_path_factory.mktemp("mcp")
    embedder = load_embedder(Settings())
    store = SqliteStore(root / "store.sqlite3", embedder.name, embedder.dimension)
    worker = StoreWorker(store, embedder, WorkerConfig())
    docs = [document(f"python:library/{name}.html") for name in PAGES]
    for doc in docs:
        worker.store_document(doc)
    store.close()
    graph = root / "graphs" / GRAPH
    graph.mkdir(parents=True)
    pages = []
    for doc, name in zip(docs[:-1], PAGES[:-1], strict=True):  # shutil: in the store, in no graph
        (graph / f"{name}.md").write_text(doc["markdown"], "utf-8")
        pages.append({"url": doc["url"], "file": f"{name}.md", "sha256": doc["sha256"]})
    (graph / "sources.json").write_text(json.dumps({"name": GRAPH, "built_at": "2026-12-01T00:00:00Z",
                                                    "scrape_profile": {"strategy": "crawl"}, "pages": pages}))
    (root / "graphs" / "other").mkdir()  # no sources.json: not a graph
    (root / "secret.md").write_text("outside every graph")
    return {"root": root, "docs": docs,
            "settings": {"SKILLGRAPH_STORE_URL": f"sqlite:///{root / 'store.sqlite3'}",
                         "SKILLGRAPH_GRAPHS_DIR": str(root / "graphs")}}


def test_tools_search_read_list(corpus: dict[str, Any]) -> None:
    tools = SkillgraphTools(Settings(corpus["settings"]))
    try:
        result = tools.search("pretty print JSON with indentation", k=5)
        assert result["hits"][0]["url"].endswith("library/json.html")
        assert (result["hits"][0]["graph"], result["hits"][0]["file"]) == (GRAPH, "json.md")
        assert tools.search("zzzxqy qqqwv")["hits"] == []
        only = tools.search("copy a directory tree", graph=GRAPH, k=10)
        assert all(h["graph"] == GRAPH for h in only["hits"])
        assert not any(h["url"].endswith("shutil.html") for h in only["hits"])
        everywhere = tools.search("copy a directory tree", k=10)
        assert everywhere["hits"][0]["url"].endswith("library/shutil.html")
        assert everywhere["hits"][0]["graph"] is None  # stored, but no graph holds it
        with pytest.raises(ToolError, match="no graph"):
            tools.search("json", graph="nope")

        page = tools.read_page(graph=GRAPH, file="json.md")
        assert page["url"].endswith("library/json.html") and page["markdown"].startswith("# ")
        by_url = tools.read_page(url=corpus["docs"][0]["url"], heading="Basic Usage")
        assert by_url["file"] == "json.md" and by_url["markdown"].startswith("## Basic Usage")
        assert "## Encoders and Decoders" not in by_url["markdown"]
        stored = tools.read_page(url=corpus["docs"][-1]["url"])
        assert stored["graph"] is None and "copytree" in stored["markdown"]
        for bad in ({"graph": GRAPH, "file": "../../secret.md"}, {"graph": GRAPH, "file": "/etc/passwd"},
                    {"graph": "other", "file": "x.md"}, {"url": "http://127.0.0.1:1/nope"}, {}):
            with pytest.raises(ToolError):
                tools.read_page(**bad)
        assert tools.list_graphs() == {"graphs": [{"name": GRAPH, "pages": 5, "built_at": "2026-12-01T00:00:00Z",
                                                   "strategy": "crawl", "source": None, "truncated": False}]}
    finally:
        tools.close()


def test_section_ignores_headings_in_code() -> None:
    text = "# T\n\n## A\n\none\n\n```\n# not a heading\n```\n\n### A.1\n\ntwo\n\n## B\n\nthree\n"
    assert section(text, "a") == "## A\n\none\n\n```\n# not a heading\n```\n\n### A.1\n\ntwo"
    assert section(text, "b") == "## B\n\nthree"
    assert section(text, "zzz") is None


def readme_client_config() -> dict[str, Any]:
    """The MCP client configuration README.md shows, with its /path/to/skillgraph made this checkout."""
    block = re.search(r"```json\n(\{\"skillgraph\".*?)\n```", (ROOT / "README.md").read_text("utf-8"), re.S)
    assert block, "README.md shows the MCP client configuration"
    config: dict[str, Any] = json.loads(block.group(1).replace("/path/to/skillgraph", str(ROOT)))["skillgraph"]
    return config


async def _session(settings: dict[str, str]) -> dict[str, Any]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    config = readme_client_config()  # the documented line itself starts the server
    args = list(config["args"])
    for name, value in settings.items():
        args += ["-s", f"{name}={value}"]
    params = StdioServerParameters(command=config["command"], args=args, cwd=config["cwd"],
                                   env={"HF_HUB_OFFLINE": "1"})
    out: dict[str, Any] = {}
    with anyio.fail_after(120):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            out["init"] = await session.initialize()
            out["tools"] = await session.list_tools()
            out["search"] = await session.call_tool("search", {"query": "pretty print JSON with indentation"})
            out["nonsense"] = await session.call_tool("search", {"query": "zzzxqy qqqwv"})
            out["read"] = await session.call_tool("read_page", {"graph": GRAPH, "file": "json.md",
                                                                "heading": "Basic Usage"})
            out["bad"] = await session.call_tool("read_page", {"graph": GRAPH, "file": "../../secret.md"})
            out["graphs"] = await session.call_tool("list_graphs", {})
            out["resource"] = await session.read_resource(f"skillgraph://{GRAPH}/pickle.md")
    return out


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if getattr(block, "text", None))


def test_scrapy_mcp_over_stdio(corpus: dict[str, Any]) -> None:
    out = anyio.run(_session, corpus["settings"])
    assert out["init"].server_info.name == "skillgraph"
    names = {tool.name for tool in out["tools"].tools}
    assert {"search", "read_page", "list_graphs"} <= names
    hits = text_of(out["search"])
    first = hits.split("\n2. ")[0]
    assert "library/json.html" in first and f"{GRAPH}/json.md" in first, hits
    assert not out["search"].is_error
    nothing = text_of(out["nonsense"])
    assert nothing.startswith("Nothing matched 'zzzxqy qqqwv'") and len(nothing.splitlines()) == 1, nothing
    assert not out["nonsense"].is_error, "no match is an answer, not an error"
    page = text_of(out["read"])
    assert page.startswith("url: http://127.0.0.1:1/python/library/json.html\nfile: docs.python.org_3_library/json.md")
    assert "## Basic Usage" in page and "json.dumps" in page
    assert out["bad"].is_error and "no file" in text_of(out["bad"])
    assert json.loads(text_of(out["graphs"]))["graphs"][0]["name"] == GRAPH
    assert out["resource"].contents[0].text.startswith("# ")
