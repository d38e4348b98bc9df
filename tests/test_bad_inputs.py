"""Issue 14's bad inputs: each a non-zero exit within seconds, one line saying what to do, no traceback.

Every command runs as a user types it, in a real subprocess from the project
root (exit codes per DESIGN.md: 2 for a usage error, 1 for a command that ran
and failed). Nothing here reaches beyond 127.0.0.1: the "unreachable" site is a
loopback port nobody listens on. The commands run a few at a time, so the
whole file costs about as long as its slowest case.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.servers import free_port

#: "Within a few seconds": the slowest case (a refused site, its probes retried) takes ~10 s on an idle
#: machine; the ceiling leaves room for a loaded CI machine, far below "retries forever" or a hang.
CEILING = 45.0
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \[")


@dataclass(frozen=True)
class Case:
    args: tuple[str, ...]
    code: int
    says: str  #: what the one line must contain (the setting, the value, what to do)
    allow: bool = False  #: allowlist the loopback port (else the SSRF guard is what refuses)


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str
    seconds: float


CLOSED = free_port()  # nobody listens: connections are refused
DEAD = f"http://127.0.0.1:{CLOSED}/docs/"
RNG = random.Random(14)
NOISE = bytes(RNG.randrange(256) for _ in range(8192))  # random bytes, NULs and control bytes included
HIGH = bytes(RNG.randrange(128, 256) for _ in range(8192))  # random bytes without one control byte: mojibake

CASES: dict[str, Case] = {
    "crawl: no url": Case(("crawl", "docs"), 2, "-a url="),
    "crawl: url=notaurl": Case(("crawl", "docs", "-a", "url=notaurl"), 2, "is not an http(s) URL"),
    "crawl: unreachable port": Case(("crawl", "docs", "-a", f"url={DEAD}"), 1,
                                    f"could not reach 127.0.0.1:{CLOSED}", allow=True),
    "crawl: loopback without the allowlist": Case(("crawl", "docs", "-a", f"url={DEAD}"), 1,
                                                  f"-s SKILLGRAPH_SSRF_ALLOWLIST=127.0.0.1:{CLOSED}"),
    "crawl: MAX_PAGES=abc": Case(("crawl", "docs", "-a", f"url={DEAD}", "-s", "SKILLGRAPH_MAX_PAGES=abc"), 2,
                                 "SKILLGRAPH_MAX_PAGES=abc: expected an integer >= 0"),
    "crawl: MAX_PAGES=-5": Case(("crawl", "docs", "-a", f"url={DEAD}", "-s", "SKILLGRAPH_MAX_PAGES=-5"), 2,
                                "SKILLGRAPH_MAX_PAGES=-5: expected an integer >= 0"),
    "worker --burst: Redis down": Case(("worker", "--burst", "-s", f"REDIS_URL=redis://127.0.0.1:{CLOSED}/0"), 1,
                                       f"Redis at 127.0.0.1:{CLOSED}/0 is unreachable"),
    "markdown: random bytes": Case(("markdown", "{noise}"), 1, "is not an HTML or text file"),
    "markdown: random high bytes": Case(("markdown", "{high}"), 1, "is not an HTML or text file"),
    "assess: random bytes": Case(("assess", "{noise}"), 1, "is not an HTML or text file"),
    "assess: random high bytes": Case(("assess", "{high}"), 1, "is not an HTML or text file"),
    "scrape: notaurl": Case(("scrape", "notaurl"), 2, "not an http(s) URL"),
    "scrape: unreachable port": Case(("scrape", DEAD), 1, "unreachable", allow=True),
    # detect answers on stdout, one JSON line per URL (strategy null and an "error" saying what to do)
    "detect: notaurl": Case(("detect", "notaurl"), 1, "not an http(s) URL"),
    "detect: unreachable port": Case(("detect", DEAD), 1, "site unreachable", allow=True),
    "detect: loopback without the allowlist": Case(("detect", DEAD), 1,
                                                   f"-s SKILLGRAPH_SSRF_ALLOWLIST=127.0.0.1:{CLOSED}"),
}


def run(case: Case, inputs: Path, tmp: Path) -> Outcome:
    files = {"noise": str(inputs / "noise.html"), "high": str(inputs / "high.txt")}
    args = [arg.format(**files) for arg in case.args]
    # every place a command could write is under tmp (the project's own store.sqlite3 is never opened)
    where = [f"SKILLGRAPH_GRAPHS_DIR={tmp / 'graphs'}", f"SKILLGRAPH_ITEMS_DIR={tmp / 'items'}",
             f"SKILLGRAPH_STATE_PATH={tmp / 'state.sqlite3'}",
             f"SKILLGRAPH_STORE_URL=sqlite:///{tmp / 'store.sqlite3'}"]
    if case.allow:
        where.append(f"SKILLGRAPH_SSRF_ALLOWLIST=127.0.0.1:{CLOSED}")
    settings = [opt for setting in where for opt in ("-s", setting)]
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "scrapy", *args, *settings], cwd=ROOT, capture_output=True,
                          text=True, timeout=CEILING * 2)
    return Outcome(proc.returncode, proc.stdout, proc.stderr, time.monotonic() - started)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    tmp = tmp_path_factory.mktemp("bad")
    (tmp / "noise.html").write_bytes(NOISE)
    (tmp / "high.txt").write_bytes(HIGH)
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {name: pool.submit(run, case, tmp, tmp / re.sub(r"\W+", "_", name)) for name, case in CASES.items()}
        return {name: future.result() for name, future in futures.items()}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_fails_in_one_line(name: str, outcomes: dict[str, Outcome]) -> None:
    case, outcome = CASES[name], outcomes[name]
    shown = f"exit {outcome.code} after {outcome.seconds:.1f}s\nstdout: {outcome.stdout[-1500:]}\n" \
            f"stderr: {outcome.stderr[-3000:]}"
    assert outcome.code == case.code, shown
    assert outcome.seconds < CEILING, shown
    assert "Traceback" not in outcome.stderr, shown
    if case.args[0] == "detect":  # its answer is the JSON line; nothing on stderr unless -L asks
        [line] = [json.loads(text) for text in outcome.stdout.splitlines()]
        assert line["strategy"] is None and case.says in line["error"], shown
        assert outcome.stderr == "", shown
        return
    last = outcome.stderr.rstrip("\n").splitlines()[-1]
    assert case.says in last, shown
    assert not LOG_LINE.match(last) and "\n" not in last and len(last) < 400, "one sentence, not a log line"
    if case.code == 2:  # a usage error stops before the crawl: Scrapy's usage line, then the sentence
        assert len(outcome.stderr.splitlines()) <= 4 and ": error: " in last, shown
    if case.args[0] in ("markdown", "assess"):
        assert outcome.stderr.splitlines() == [last], "the only line"
        assert "\ufffd" not in outcome.stdout and all(ord(c) < 0x80 for c in outcome.stdout), "no mojibake"
