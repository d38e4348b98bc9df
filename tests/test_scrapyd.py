"""scrapyd schedules skillgraph over HTTP: a real scrapyd on loopback, locked down, the project deployed as an egg.

scrapyd runs with the project's ``scrapyd.conf`` (``bind_address = 127.0.0.1``, a ``username``), this
test's port and directories, and a random ``password``: every call without the credentials answers 401.
The egg is built with scrapyd-client's ``scrapyd-deploy`` from a copy of the project (it writes a
``setup.py`` beside ``scrapy.cfg``, so never in the working tree), with the project's ``scrapy.cfg``
whose ``[deploy]`` URL points at this scrapyd and whose password comes from ``SCRAPYD_PASSWORD``;
crawls are scheduled with ``scrapyd-client schedule`` from the same ``scrapy.cfg``, as the docs do.
Jobs get Redis from scrapyd's environment (``SKILLGRAPH_REDIS_URL``), so no password is scheduled.
"""

from __future__ import annotations

import base64
import configparser
import json
import os
import secrets
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skillgraph.urls import default_graph_name
from tests.conftest import ROOT
from tests.redis_server import RedisServer, redis_server  # noqa: F401 - fixture
from tests.servers import SiteServer, free_port
from tests.test_security import add_worker_user

#: What this test changes in the project's scrapyd.conf (the rest, the lock-down included, is the shipped file).
OVERRIDES = {"http_port": "{port}", "eggs_dir": "{dir}/eggs", "logs_dir": "{dir}/logs", "dbs_dir": "{dir}/dbs",
             "max_proc": "2", "poll_interval": "0.5", "password": "{password}"}


def scrapyd_conf(port: int, directory: Path, password: str) -> str:
    config = configparser.ConfigParser()
    config.read(ROOT / "scrapyd.conf")
    section = config["scrapyd"]
    assert section["bind_address"] == "127.0.0.1", "the shipped scrapyd.conf listens on loopback only"
    assert section["username"] and not section["items_dir"], "a username; no FEEDS copy of every item"
    for key, value in OVERRIDES.items():
        section[key] = value.format(port=port, dir=directory, password=password)
    lines = ["[scrapyd]", *(f"{key} = {value}" for key, value in section.items())]
    return "\n".join(lines) + "\n"


class Scrapyd:
    def __init__(self, directory: Path, env: dict[str, str] | None = None) -> None:
        self.dir = directory
        self.port = free_port()
        self.username = "skillgraph"
        self.password = secrets.token_hex(16)
        (directory / "scrapyd.conf").write_text(scrapyd_conf(self.port, directory, self.password))
        scrapyd = shutil.which("scrapyd", path=str(Path(sys.executable).parent))
        assert scrapyd, "scrapyd is pinned in requirements.txt"
        # scrapyd reads ./scrapyd.conf; jobs run in this directory too, away from the project root
        self.log = open(directory / "scrapyd.log", "w")  # noqa: SIM115 - closed in stop()
        environ = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPYD_")}
        self.proc = subprocess.Popen([scrapyd], cwd=directory, stdout=self.log, stderr=subprocess.STDOUT,
                                     env={**environ, **(env or {})})
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

    def call(self, path: str, fields: list[tuple[str, str]] | None = None, auth: tuple[str, str] | None = None
             ) -> tuple[int, dict[str, Any]]:
        """(HTTP status, JSON answer) of a GET, or a POST of ``fields``; ``auth`` None: no credentials."""
        data = urllib.parse.urlencode(fields).encode() if fields is not None else None
        request = urllib.request.Request(self.url + path, data=data)
        if auth is not None:
            request.add_header("Authorization", "Basic " + base64.b64encode(":".join(auth).encode()).decode())
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                return answer.status, json.load(answer)
        except urllib.error.HTTPError as error:
            return error.code, {}

    def get(self, path: str, **params: str) -> dict[str, Any]:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        status, result = self.call(path + query, auth=(self.username, self.password))
        assert status == 200, (path, status)
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


def client_env(password: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPYD_")}
    if password is not None:
        env["SCRAPYD_PASSWORD"] = password
    return env


def deploy(scrapyd: Scrapyd, tmp_path: Path, password: str | None = None) -> subprocess.CompletedProcess[str]:
    """``scrapyd-deploy`` with the project's scrapy.cfg (its URL pointed at this scrapyd), password from the env."""
    project = tmp_path / "project"
    if not project.exists():
        shutil.copytree(ROOT / "skillgraph", project / "skillgraph", ignore=shutil.ignore_patterns("__pycache__"))
    cfg = (ROOT / "scrapy.cfg").read_text()
    assert "url = http://127.0.0.1:6800\n" in cfg and "password = ${SCRAPYD_PASSWORD}" in cfg, cfg
    target = f"url = {scrapyd.url.rstrip('/')}\n"  # like the shipped one, without a trailing slash
    (project / "scrapy.cfg").write_text(cfg.replace("url = http://127.0.0.1:6800\n", target))
    deployer = Path(sys.executable).parent / "scrapyd-deploy"
    return subprocess.run([str(deployer), "-v", "r1"], cwd=project, capture_output=True, text=True, timeout=120,
                          env=client_env(password))


def schedule(scrapyd: Scrapyd, tmp_path: Path, spider: str, args: list[str]) -> str:
    """``scrapyd-client schedule`` as docs/distributed.md runs it (credentials from scrapy.cfg): the job id."""
    command = [str(Path(sys.executable).parent / "scrapyd-client"), "schedule", "-p", "skillgraph", spider]
    for arg in args:
        command += ["--arg", arg]
    proc = subprocess.run(command, cwd=tmp_path / "project", capture_output=True, text=True, timeout=60,
                          env=client_env(scrapyd.password))
    assert proc.returncode == 0 and " => " in proc.stdout, proc.stdout + proc.stderr
    return proc.stdout.strip().rsplit(" => ", 1)[1]


def deployed(scrapyd: Scrapyd, tmp_path: Path) -> str:
    proc = deploy(scrapyd, tmp_path, scrapyd.password)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert '"status": "ok"' in proc.stdout, proc.stdout
    return "r1"


def test_scrapyd_schedules_a_docs_crawl_into_a_graph(tmp_path: Path, sites: dict[str, SiteServer],
                                                      redis_server: RedisServer) -> None:  # noqa: F811
    """The documented node A: Redis for the jobs comes from scrapyd's environment, as the worker ACL user."""
    redis_url = add_worker_user(redis_server)
    scrapyd = Scrapyd(tmp_path, env={"SKILLGRAPH_REDIS_URL": redis_url})
    try:
        site = sites["crawl_site"]
        deployed(scrapyd, tmp_path)
        assert scrapyd.get("listspiders.json", project="skillgraph")["spiders"].count("docs") == 1
        url = site.url + "docs/"
        graphs, items = tmp_path / "graphs", tmp_path / "items"
        settings = {"SKILLGRAPH_GRAPHS_DIR": graphs, "SKILLGRAPH_ITEMS_DIR": items,
                    "SKILLGRAPH_STATE_PATH": tmp_path / "state.sqlite3",
                    "SKILLGRAPH_SSRF_ALLOWLIST": f"127.0.0.1:{site.port}",
                    "SKILLGRAPH_RENDER_ENABLED": False, "DOWNLOAD_DELAY": 0, "SKILLGRAPH_MAX_PAGES": 50}
        job = schedule(scrapyd, tmp_path, "docs", [f"url={url}", *(f"setting={k}={v}" for k, v in settings.items())])
        deadline = time.monotonic() + 120
        while True:
            jobs = scrapyd.get("listjobs.json", project="skillgraph")
            finished = [j for j in jobs["finished"] if j["id"] == job]
            if finished:
                break
            assert time.monotonic() < deadline, jobs
            time.sleep(0.3)
    finally:
        scrapyd.stop()
    log = (tmp_path / "logs" / "skillgraph" / "docs" / f"{job}.log").read_text()
    assert "'finish_reason': 'finished'" in log, log[-3000:]
    assert "Traceback" not in log, log
    sources = json.loads((graphs / default_graph_name(url) / "sources.json").read_text())
    assert len(sources["pages"]) >= 3
    assert sources["scrape_profile"]["strategy"] == "crawl"
    assert all((graphs / default_graph_name(url) / p["file"]).read_text().strip() for p in sources["pages"])
    assert len(list((items / "docs").glob("*.json"))) == len(sources["pages"])
    # distributed through the environment's Redis: the shared frontier, every document queued for the store
    assert "joined frontier" in log and "'scheduler/enqueued/redis'" in log, log[-3000:]
    assert redis_server.client().llen("skillgraph:queue") == len(sources["pages"])
    password = redis_url.split("@")[0].rsplit(":", 1)[1]
    for text in (log, (tmp_path / "scrapyd.log").read_text()):
        assert password not in text and redis_server.password not in text and scrapyd.password not in text


def test_scrapyd_without_the_credentials_answers_401_and_runs_nothing(scrapyd: Scrapyd, tmp_path: Path) -> None:
    calls: list[tuple[str, list[tuple[str, str]] | None]] = [
        ("daemonstatus.json", None), ("listprojects.json", None), ("listjobs.json?project=skillgraph", None),
        ("schedule.json", [("project", "skillgraph"), ("spider", "docs"), ("url", "http://127.0.0.1:1/")]),
        ("addversion.json", [("project", "evil"), ("version", "1"), ("egg", "not an egg")]),
        ("delproject.json", [("project", "skillgraph")])]
    for auth in (None, ("skillgraph", "wrong"), ("admin", scrapyd.password)):
        for path, fields in calls:
            status, _ = scrapyd.call(path, fields, auth=auth)
            assert status == 401, (path, auth, status)
    refused = deploy(scrapyd, tmp_path, password=None)  # SCRAPYD_PASSWORD not exported
    assert refused.returncode != 0 and "401" in refused.stdout + refused.stderr, refused.stdout + refused.stderr
    assert scrapyd.get("listprojects.json")["projects"] == [], "nothing was deployed, so nothing can run"


def test_scrapyd_refuses_a_hostile_graph_name_and_writes_nothing(scrapyd: Scrapyd, tmp_path: Path,
                                                                 sites: dict[str, SiteServer]) -> None:
    """``graph`` arrives over HTTP: whoever may schedule a job still cannot write outside the graphs folder."""
    deployed(scrapyd, tmp_path)
    site = sites["crawl_site"]
    outside = tmp_path / "outside"
    graphs = outside / "bad" / "g"
    graphs.mkdir(parents=True)
    before = sorted(str(p.relative_to(outside)) for p in outside.rglob("*"))
    settings = {"SKILLGRAPH_GRAPHS_DIR": graphs, "SKILLGRAPH_ITEMS_DIR": outside / "bad" / "items",
                "SKILLGRAPH_STATE_PATH": outside / "bad" / "state.sqlite3",
                "SKILLGRAPH_SSRF_ALLOWLIST": f"127.0.0.1:{site.port}", "SKILLGRAPH_RENDER_ENABLED": False}
    jobs = [schedule(scrapyd, tmp_path, "docs", [f"url={site.url}docs/", f"graph={name}",
                                                 *(f"setting={k}={v}" for k, v in settings.items())])
            for name in ("../../etc", "a/b", "..")]
    deadline = time.monotonic() + 120
    while True:
        finished = {j["id"] for j in scrapyd.get("listjobs.json", project="skillgraph")["finished"]}
        if set(jobs) <= finished:
            break
        assert time.monotonic() < deadline, "the jobs end at once: a usage error"
        time.sleep(0.3)
    daemon_log = (tmp_path / "scrapyd.log").read_text()
    assert daemon_log.count("is not allowed") >= len(jobs), daemon_log[-3000:]
    assert sorted(str(p.relative_to(outside)) for p in outside.rglob("*")) == before, "nothing written"
