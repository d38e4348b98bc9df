"""Run a command and measure it: wall seconds, CPU seconds and peak RSS of its whole process tree.

CPU time is the sum over the process and every descendant of its own user +
system time, sampled from ``/proc`` ten times a second (a pool's workers are
children of a fork server the crawl never waits for, so ``wait4`` misses them);
the larger of that and ``wait4``'s figure is kept. Steadier than wall time on a
shared machine.
Each sample also notes the machine's busy and idle time (``/proc/stat``) and this
process's own CPU (a bench's loopback server runs in it), so :func:`cores_used`
can tell, for a phase of the run, how many of the machine's cores the tree used,
how many the server and everything else, and how many stood idle.
Peak memory is sampled from ``/proc`` ten times a second as the *sum* of PSS over
the process and its live descendants (a pool's workers count, shared pages once), next to the kernel's
``ru_maxrss`` (the largest single process).
"""

from __future__ import annotations

import compileall
import os
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass
class Measured:
    returncode: int
    wall: float
    cpu: float  #: user + system seconds of the tree
    peak_rss_mb: float  #: sampled sum of PSS over the tree
    max_rss_mb: float  #: the largest single process (kernel)
    main_cpu: float = 0.0  #: user + system seconds of the process itself (the reactor's, for a crawl)
    #: pid -> (parent pid, command line, user + system seconds): every process of the tree seen
    processes: dict[int, tuple[int, str, float]] = field(default_factory=dict)
    #: one :class:`Sample` every tenth of a second
    timeline: list[Sample] = field(default_factory=list)


@dataclass
class Sample:
    at: float  #: ``time.time()``
    busy: float  #: the machine's busy CPU seconds since boot (every core, ``/proc/stat``: not idle, not iowait)
    idle: float  #: the machine's idle + iowait CPU seconds since boot
    tree: float  #: user + system seconds of the measured tree so far
    own: float  #: user + system seconds of this process (a bench's loopback server, the sampler)


@dataclass
class CoresUsed:
    """Cores in use over a phase, on average: the tree, this process, the rest of the machine, idle."""

    tree: float
    own: float
    others: float
    idle: float

    def __str__(self) -> str:
        return (f"cores: build {self.tree:.2f}, bench process (loopback server, sampler) {self.own:.2f}, "
                f"other processes {self.others:.2f}, idle {self.idle:.2f}")


def cores_used(measured: Measured, start: float, end: float) -> CoresUsed | None:
    """Average cores in use between the epoch times ``start`` and ``end`` (None: fewer than two samples in it)."""
    inside = [sample for sample in measured.timeline if start <= sample.at <= end]
    if len(inside) < 2:
        return None
    first, last = inside[0], inside[-1]
    span = last.at - first.at
    tree, own = (last.tree - first.tree) / span, (last.own - first.own) / span
    busy, idle = (last.busy - first.busy) / span, (last.idle - first.idle) / span
    return CoresUsed(tree, own, max(0.0, busy - tree - own), idle)


def _machine() -> tuple[float, float]:
    """(busy, idle + iowait) CPU seconds of every core since boot."""
    with open("/proc/stat") as stat:
        fields = [int(value) for value in stat.readline().split()[1:9]]
    idle = fields[3] + fields[4]
    return (sum(fields) - idle) / TICK, idle / TICK


def compile_package(root: Path) -> None:
    """Bytecode for the project's own modules, as an installed package has it (pip compiles at install).

    A process started with ``PYTHONDONTWRITEBYTECODE`` (set on some CI and sandbox machines) never
    writes it, so every crawl, and every page worker the fork server starts, would compile ~130 modules
    again: ~0.2 s a process, charged to the build's start-up. Written once before any round, it is read
    by every round the same way, whichever side it measures.
    """
    compileall.compile_dir(str(root / "skillgraph"), quiet=1)


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def _pss(pid: int) -> int:
    """Proportional set size: shared pages split between the processes sharing them (bytes)."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0


TICK = os.sysconf("SC_CLK_TCK")


def _cpu(pid: int) -> float:
    """Own user + system seconds of ``pid`` (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


def tree_sample(pid: int, cpu: dict[int, float], seen: dict[int, tuple[int, str]] | None = None) -> int:
    """PSS of ``pid`` and its live descendants (a browser's shared pages counted once); notes their CPU
    (and, in ``seen``, each one's parent and command line)."""
    tree, total, todo = _children(), 0, [(pid, 0)]
    while todo:
        current, parent = todo.pop()
        total += _pss(current)
        cpu[current] = max(cpu.get(current, 0.0), _cpu(current))
        if seen is not None and current not in seen:
            try:
                command = Path(f"/proc/{current}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                command = "?"
            seen[current] = (parent, command.strip())
        todo.extend((child, current) for child in tree.get(current, ()))
    return total


def run(cmd: list[str], **popen: Any) -> Measured:
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, **popen)
    peak = 0
    cpu: dict[int, float] = {}
    seen: dict[int, tuple[int, str]] = {}
    done = threading.Event()

    timeline: list[Sample] = []

    def sample() -> None:
        nonlocal peak
        while not done.wait(0.1):
            peak = max(peak, tree_sample(proc.pid, cpu, seen))
            busy, idle = _machine()
            own = os.times()
            timeline.append(Sample(time.time(), busy, idle, sum(cpu.values()), own.user + own.system))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    done.set()
    sampler.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    waited = usage.ru_utime + usage.ru_stime
    processes = {pid: (parent, command, cpu.get(pid, 0.0)) for pid, (parent, command) in seen.items()}
    return Measured(proc.returncode, wall, max(waited, sum(cpu.values())), peak / 2**20, usage.ru_maxrss / 1024,
                    cpu.get(proc.pid, 0.0), processes, timeline)
