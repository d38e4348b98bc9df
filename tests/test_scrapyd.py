"""scrapyd schedules skillgraph over HTTP: a real scrapyd on loopback, the project deployed as an egg.

The egg is built with scrapyd-client's ``scrapyd-deploy`` from a copy of the
project (it writes a ``setup.py`` beside ``scrapy.cfg``, so never in the
working tree), with a temporary ``scrapy.cfg`` whose target is this scrapyd.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skillgraph.urls import default_graph_name
from tests.conftest import ROOT
from tests.servers import SiteServer, free_port

SCRAPYD_CONF = """[scrapyd]
bind_address = 127.0.0.1
http_port = {port}
eggs_dir = {dir}/eggs
logs_dir = {dir}/logs
items_dir =
dbs_dir = {dir}/dbs
max_proc = 2
poll_interval = 0.5
"""


class Scrapyd:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.port = free_port()
        (directory / "scrapyd.conf").write_text(SCRAPYD_CONF.format(port=self.port, dir=directory))
        scrapyd = shutil.which("scrapyd", path=str(Path(sys.executable).parent))
        assert scrapyd, "scrapyd is pinned in requirements.txt"
        # scrapyd reads ./scrapyd.conf; jobs run in this directory too, away from the project root
        self.log = open(directory / "scrapyd.log", "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen([scrapyd], cwd=directory, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while True:
            try:
                if self.get("daemonstatus.json")["status"] == "ok":
                    return
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise
                time.sleep(0.1)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def get(self, path: str, **params: str) -> dict[str, Any]:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        with urllib.request.urlopen(self.url + path + query, timeout=10) as answer:
            result: dict[str, Any] = json.load(answer)
        return result

    def post(self, path: str, fields: list[tuple[str, str]]) -> dict[str, Any]:
        data = urllib.parse.urlencode(fields).encode()
        with urllib.request.urlopen(self.url + path, data=data, timeout=10) as answer:
            result: dict[str, Any] = json.load(answer)
        return result

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=20)
        self.log.close()


@pytest.fixture
def scrapyd(tmp_path: Path) -> Iterator[Scrapyd]:
    server = Scrapyd(tmp_path)
    yield server
    server.stop()


def deploy(scrapyd: Scrapyd, tmp_path: Path) -> str:
    project = tmp_path / "project"
    shutil.copytree(ROOT / "skillgraph", project / "skillgraph", ignore=shutil.ignore_patterns("__pycache__"))
    (project / "scrapy.cfg").write_text(
        f"[settings]\ndefault = skillgraph.settings\n\n[deploy:test]\nurl = {scrapyd.url}\nproject = skillgraph\n")
    deployer = Path(sys.executable).parent / "scrapyd-deploy"
    proc = subprocess.run([str(deployer), "test", "-v", "r1"], cwd=project, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert '"status": "ok"' in proc.stdout, proc.stdout
    return "r1"


def test_scrapyd_schedules_a_docs_crawl_into_a_graph(scrapyd: Scrapyd, tmp_path: Path,
                                                      sites: dict[str, SiteServer]) -> None:
    site = sites["crawl_site"]
    deploy(scrapyd, tmp_path)
    assert scrapyd.get("listspiders.json", project="skillgraph")["spiders"].count("docs") == 1
    url = site.url + "docs/"
    graphs, items = tmp_path / "graphs", tmp_path / "items"
    settings = {"SKILLGRAPH_GRAPHS_DIR": graphs, "SKILLGRAPH_ITEMS_DIR": items,
                "SKILLGRAPH_STATE_PATH": tmp_path / "state.sqlite3",
                "SKILLGRAPH_SSRF_ALLOWLIST": f"127.0.0.1:{site.port}",
                "SKILLGRAPH_RENDER_ENABLED": False, "DOWNLOAD_DELAY": 0, "SKILLGRAPH_MAX_PAGES": 50}
    fields = [("project", "skillgraph"), ("spider", "docs"), ("url", url)]
    fields += [("setting", f"{key}={value}") for key, value in settings.items()]
    job = scrapyd.post("schedule.json", fields)
    assert job["status"] == "ok", job
    deadline = time.monotonic() + 120
    while True:
        jobs = scrapyd.get("listjobs.json", project="skillgraph")
        finished = [j for j in jobs["finished"] if j["id"] == job["jobid"]]
        if finished:
            break
        assert time.monotonic() < deadline, jobs
        time.sleep(0.3)
    log = (tmp_path / "logs" / "skillgraph" / "docs" / f"{job['jobid']}.log").read_text()
    assert "'finish_reason': 'finished'" in log, log[-3000:]
    assert "Traceback" not in log, log
    sources = json.loads((graphs / default_graph_name(url) / "sources.json").read_text())
    assert len(sources["pages"]) >= 3
    assert sources["scrape_profile"]["strategy"] == "crawl"
    assert all((graphs / default_graph_name(url) / p["file"]).read_text().strip() for p in sources["pages"])
    assert len(list((items / "docs").glob("*.json"))) == len(sources["pages"])
