"""What a Redis crash loses under AOF ``appendfsync always`` and ``everysec``: measured, not quoted.

A writer sends ``RPUSH bench i`` one command at a time (each waits for its reply, as the frontier's and the
dual write's calls do) to a ``redis-server`` on a Unix socket with its AOF in a temp dir, and counts the
acknowledged writes. Two kinds of crash:

* **Process crash** (``SIGKILL`` after a random 1–2 s of writes, then a restart from the AOF): acknowledged
  writes that are not in the list after the restart are lost. Redis ``write()``s the AOF before it replies
  under both policies, so the kernel's page cache holds every acknowledged write when the process dies.
* **OS crash / power loss** (what is not yet ``fsync``ed is gone): not something to do to this machine, so
  it is measured as exposure. ``redis-server`` runs under ``strace -f -ttt -T -e trace=fsync,fdatasync``;
  an acknowledged write is durable when the first fsync that *starts after* its reply completes. The
  figures: the longest time a write stayed acknowledged but not durable, and the most acknowledged writes
  at risk at any one instant (the loss of a crash at that instant). Under ``always`` the fsync runs before
  the reply: nothing acknowledged is ever at risk (checked by counting fsyncs per write).

The baseline is ``everysec``; ``always``'s write rate is printed as a ratio against it (the price of
losing nothing). strace slows each fsync a little (it stops on those calls only), so the exposure is
slightly pessimistic.

    .venv/bin/python bench/redis_outage.py [--trials 3] [--seconds 3] [--json OUT]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import redis


def start(workdir: Path, policy: str, trace: Path | None = None) -> subprocess.Popen[bytes]:
    sock = workdir / "redis.sock"
    args = ["redis-server", "--port", "0", "--unixsocket", str(sock), "--save", "", "--appendonly", "yes",
            "--appendfsync", policy, "--dir", str(workdir)]
    if trace is not None:
        args = ["strace", "-f", "-ttt", "-T", "-e", "trace=fsync,fdatasync", "-o", str(trace), *args]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = redis.Redis(unix_socket_path=str(sock))
    deadline = time.monotonic() + 10
    while True:
        try:
            client.ping()
            return proc
        except (redis.ConnectionError, FileNotFoundError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def write_until(client: redis.Redis, seconds: float) -> list[float]:
    """RPUSH 1, 2, 3, ... for ``seconds``; the wall-clock time of each reply (index i-1: write i)."""
    acked: list[float] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        client.rpush("bench", len(acked) + 1)
        acked.append(time.time())
    return acked


def process_crash(policy: str, seconds: float) -> dict[str, Any]:
    """SIGKILL mid-write, restart from the AOF: acknowledged writes missing afterwards."""
    with tempfile.TemporaryDirectory(prefix="redis-outage-") as tmp:
        workdir = Path(tmp)
        proc = start(workdir, policy)
        client = redis.Redis(unix_socket_path=str(workdir / "redis.sock"))
        acked = write_until(client, seconds)
        proc.send_signal(signal.SIGKILL)  # right after the last reply: nothing in between to flush anything
        proc.wait()
        proc = start(workdir, policy)
        try:
            recovered = int(client.llen("bench"))
        finally:
            proc.kill()
            proc.wait()
    return {"acked": len(acked), "recovered": recovered, "lost": max(len(acked) - recovered, 0),
            "rate": len(acked) / seconds}


def fsyncs(trace: Path) -> list[tuple[float, float]]:
    """(start, end) wall-clock times of every completed fsync/fdatasync in an ``strace -ttt -T`` log."""
    spans = []
    for line in trace.read_text().splitlines():
        parts = line.split()
        if len(parts) < 3 or not parts[2].startswith(("fsync(", "fdatasync(")) or "<" not in line:
            continue
        start = float(parts[1])
        duration = float(line.rsplit("<", 1)[1].rstrip(">"))
        spans.append((start, start + duration))
    return spans


def exposure(policy: str, seconds: float) -> dict[str, Any]:
    """OS crash: how long, and how many, acknowledged writes were not yet fsynced."""
    with tempfile.TemporaryDirectory(prefix="redis-outage-") as tmp:
        workdir = Path(tmp)
        trace = workdir / "strace.log"
        proc = start(workdir, policy, trace)
        client = redis.Redis(unix_socket_path=str(workdir / "redis.sock"))
        acked = write_until(client, seconds)
        time.sleep(1.5)  # the next everysec fsync, covering the last writes
        with contextlib.suppress(redis.ConnectionError):  # the server closes the connection as it exits
            client.shutdown(nosave=True)
        proc.wait()  # strace exits with its tracee
        spans = sorted(fsyncs(trace))
    during = [s for s in spans if acked and acked[0] <= s[0] <= acked[-1]]
    result = {"acked": len(acked), "fsyncs": len(during), "rate": len(acked) / seconds}
    if policy == "always":  # fsync before each reply: the check is that fsyncs keep pace with writes
        result.update(fsyncs_per_write=round(len(during) / max(len(acked), 1), 3), max_window_s=0.0, max_at_risk=0)
        return result
    durable_at: list[float] = []
    i = 0
    for t in acked:
        while i < len(spans) and spans[i][0] < t:
            i += 1
        durable_at.append(spans[i][1] if i < len(spans) else float("inf"))
    windows = [d - t for t, d in zip(acked, durable_at, strict=True)]
    # at risk at instant x: acked before x, durable after x; the maximum is reached just before an fsync ends
    at_risk = max((sum(1 for t, d in zip(acked, durable_at, strict=True) if t < end <= d) for _, end in spans),
                  default=0)
    at_risk = max(at_risk, sum(1 for d in durable_at if d == float("inf")))
    result.update(max_window_s=round(max(windows, default=0.0), 3), max_at_risk=at_risk)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0, help="writing time of an exposure run")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    for tool in ("redis-server", "strace"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} missing")
    random.seed(17)
    report: dict[str, Any] = {}
    for policy in ("everysec", "always"):
        crashes = [process_crash(policy, random.uniform(1.0, 2.0)) for _ in range(args.trials)]
        exposures = [exposure(policy, args.seconds) for _ in range(args.trials)]
        report[policy] = {"process_crash": crashes, "os_crash_exposure": exposures}
        rate = sum(c["rate"] for c in crashes) / len(crashes)
        print(f"{policy:9} writes/s {rate:8.0f}   process crash: lost {[c['lost'] for c in crashes]} of "
              f"{[c['acked'] for c in crashes]} acked   OS crash exposure: longest "
              f"{max(e['max_window_s'] for e in exposures):.3f} s, at most {max(e['max_at_risk'] for e in exposures)}"
              f" acked writes at risk" + (f" (fsyncs per write {[e['fsyncs_per_write'] for e in exposures]})"
                                           if policy == "always" else ""))
    ratio = (sum(c["rate"] for c in report["always"]["process_crash"])
             / sum(c["rate"] for c in report["everysec"]["process_crash"]))
    print(f"always / everysec write rate: {ratio:.2f}")
    report["always_over_everysec_rate"] = round(ratio, 3)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
