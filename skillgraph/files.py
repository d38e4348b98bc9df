"""One atomic file writer for every file others read (graphs, items, stats, reports).

DESIGN.md: a reader never sees half a file. So a file is written to a temp
file beside its target (same filesystem), made readable by everyone (0644:
``mkstemp`` would leave 0600, which a web server or another user's agent
could not read), optionally fsynced (disk items must survive a crash before
they are queued), and moved into place with ``os.replace``. A failed write
leaves no temp file behind.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def write_atomic(path: Path, data: str | bytes, mode: int = 0o644, durable: bool = False) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` atomically, with ``mode``; ``durable`` fsyncs first."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, data: Any, **dumps: Any) -> None:
    """``data`` as indented JSON (UTF-8, non-ASCII kept), written with :func:`write_atomic`."""
    write_atomic(path, json.dumps(data, indent=2, ensure_ascii=False, **dumps) + "\n")


def write_stream(path: Path, chunks: Iterable[str], mode: int = 0o644) -> None:
    """:func:`write_atomic` for text given in chunks: never all of it in memory."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.writelines(chunks)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
