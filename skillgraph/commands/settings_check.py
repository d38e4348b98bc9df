"""Validate every ``SKILLGRAPH_*`` setting once, at start: type, range, choices.

Scrapy's typed getters raise deep inside a component (``getint("abc")`` is a
traceback from some ``from_crawler``), and a negative bound reads as "no
bound". Checking once, before anything is built, turns a bad value into one
line naming the setting, the value and what is allowed; commands print it and
exit 2 (a usage error, DESIGN.md).

The rules come from :data:`skillgraph.addon.DEFAULTS` (the default's type:
``bool``, ``int`` >= 0, ``float`` >= 0) refined by :data:`RULES` (ranges,
choices, settings read with another getter than their default's type).
Strings, lists and settings without a typed default are not checked, except
``REDIS_URL`` (redis-py's own parser: ``redis://``, ``rediss://`` for TLS,
``unix://``), which an error shows with its password replaced by ``***``.
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillgraph.addon import DEFAULTS
from skillgraph.distributed.connection import ALLOWED, redacted, url_problem
from skillgraph.safety.ssrf import parse_allowlist

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings


class SettingsError(ValueError):
    """A setting with a value outside its type, range or choices (one line: what, and what is allowed)."""

    def __init__(self, name: str, value: Any, allowed: str) -> None:
        self.name, self.value, self.allowed = name, value, allowed
        super().__init__(f"invalid setting {name}={_show(value)}: expected {allowed}")


@dataclass(frozen=True)
class Rule:
    kind: str  #: "bool" | "int" | "float" | "choice" | "aplimit" | "hostports" | "redis_url"
    low: float | None = None  #: inclusive lower bound
    high: float | None = None  #: inclusive upper bound
    positive: bool = False  #: strictly above ``low``
    choices: tuple[str, ...] = ()
    note: str = ""  #: what the special values mean, e.g. "0: no bound"

    def allowed(self) -> str:
        if self.kind == "bool":
            text = "True or False"
        elif self.kind == "choice":
            text = "one of " + ", ".join(self.choices)
        elif self.kind == "aplimit":
            text = "max or an integer >= 1"
        elif self.kind == "hostports":
            text = "comma-separated host:port entries, e.g. 127.0.0.1:8000"
        elif self.kind == "redis_url":
            text = ALLOWED
        else:
            text = "an integer" if self.kind == "int" else "a number"
            if self.low is not None and self.high is not None:
                text += f" from {_num(self.low)} to {_num(self.high)}"
            elif self.low is not None:
                text += f" {'>' if self.positive else '>='} {_num(self.low)}"
        return f"{text} ({self.note})" if self.note else text


def _int(low: float = 0, note: str = "") -> Rule:
    return Rule("int", low=low, note=note)


def _seconds(note: str = "", positive: bool = True) -> Rule:
    return Rule("float", low=0, positive=positive, note=note)


FRACTION = Rule("float", low=0, high=1)

#: Ranges and choices beyond what a default's type says.
RULES: dict[str, Rule] = {
    "SKILLGRAPH_MAX_PAGES": _int(0, "0: no bound"),
    "SKILLGRAPH_CRAWL_TIMEOUT": _seconds("seconds; 0: no bound", positive=False),
    "SKILLGRAPH_CRAWL_TIMEOUT_GRACE": _seconds("seconds", positive=False),
    "SKILLGRAPH_RECENCY_HOURS": _seconds("hours; 0: off", positive=False),
    "SKILLGRAPH_REDIS_RETRY_SECONDS": _seconds("seconds"),
    "SKILLGRAPH_LLMS_MAX_SECTIONS": _int(1),
    "SKILLGRAPH_LLMS_FILE_BYTES": _int(1),
    "SKILLGRAPH_SITEMAP_MAX_FILES": _int(1),
    "SKILLGRAPH_SITEMAP_MAX_URLS": _int(1),
    "SKILLGRAPH_QUALITY_THRESHOLD": FRACTION,
    "SKILLGRAPH_RENDER_BACKEND": Rule("choice", choices=("playwright", "splash")),
    "SKILLGRAPH_RENDER_TIMEOUT": _seconds("seconds"),
    "SKILLGRAPH_RENDER_MAX_PAGES_OPEN": _int(1),
    "SKILLGRAPH_MEDIAWIKI_APLIMIT": Rule("aplimit"),
    "SKILLGRAPH_BATCH_JOBS": _int(1),
    "SKILLGRAPH_BATCH_DETECT_TIMEOUT": _seconds("seconds"),
    "SKILLGRAPH_BATCH_PROGRESS_INTERVAL": _seconds("seconds"),
    "SKILLGRAPH_STORE_EMBED_DIM": _int(1),
    "SKILLGRAPH_STORE_CHUNK_CHARS": _int(1),
    "SKILLGRAPH_STORE_SEARCH_CANDIDATES": _int(1),
    "SKILLGRAPH_STORE_SEMANTIC_WEIGHT": FRACTION,
    "SKILLGRAPH_WORKER_CLAIM_TIMEOUT": _seconds("seconds"),
    "SKILLGRAPH_WORKER_MAX_ATTEMPTS": _int(1),
    "SKILLGRAPH_DISTRIBUTED_WORKER_TIMEOUT": _seconds("seconds"),
    "SKILLGRAPH_DISTRIBUTED_POLL_INTERVAL": _seconds("seconds"),
    "SKILLGRAPH_DISTRIBUTED_DETECT_TIMEOUT": _seconds("seconds"),
    "SKILLGRAPH_DISTRIBUTED_PROFILE_TTL": _seconds("seconds", positive=False),
    "SKILLGRAPH_PROGRESS_INTERVAL": _seconds("seconds"),
    "SKILLGRAPH_SUMMARY_FORMAT": Rule("choice", choices=("text", "json", "none")),
    "SKILLGRAPH_SSRF_ALLOWLIST": Rule("hostports"),
    "SKILLGRAPH_PAGE_WORKERS": _int(-1, "-1: one process per CPU core; 0: in the crawl's own thread"),
    "SKILLGRAPH_RESPONSE_BACKLOG": _int(0, "0: waiting responses bounded in bytes alone"),
}

#: Settings the add-on gives no default but a bad value of which would only fail deep in a component.
OTHER_RULES: dict[str, Rule] = {"REDIS_URL": Rule("redis_url")}


def rules() -> dict[str, Rule]:
    """Every checked setting: typed defaults of the add-on, refined by :data:`RULES`."""
    found: dict[str, Rule] = {}
    for name, default in DEFAULTS.items():
        if isinstance(default, bool):
            found[name] = Rule("bool")
        elif isinstance(default, int):
            found[name] = _int(0)
        elif isinstance(default, float):
            found[name] = Rule("float", low=0)
    found.update(RULES)
    found.update(OTHER_RULES)
    return found


def check_settings(settings: BaseSettings) -> None:
    """Raise :class:`SettingsError` for the first ``SKILLGRAPH_*`` setting with a bad value."""
    for name, rule in rules().items():
        value = settings.get(name)
        if value is None:
            continue
        check_value(name, value, rule)


def check_value(name: str, value: Any, rule: Rule) -> None:
    if rule.kind == "bool":
        if not _is_bool(value):
            raise SettingsError(name, value, rule.allowed())
        return
    if rule.kind == "choice":
        if str(value).strip().lower() not in rule.choices:
            raise SettingsError(name, value, rule.allowed())
        return
    if rule.kind == "hostports":
        entries = value.split(",") if isinstance(value, str) else list(value)
        try:
            parse_allowlist(str(entry) for entry in entries)
        except ValueError:
            raise SettingsError(name, value if isinstance(value, str) else ",".join(map(str, entries)),
                                rule.allowed()) from None
        return
    if rule.kind == "redis_url":
        problem = url_problem(str(value)) if value else None  # empty: distributed mode off
        if problem:
            raise SettingsError(name, redacted(str(value)), f"{rule.allowed()}; {problem}")
        return
    if rule.kind == "aplimit":
        text = str(value).strip().lower()
        if text != "max" and not (text.isdigit() and int(text) >= 1):
            raise SettingsError(name, value, rule.allowed())
        return
    number = _number(value, integer=rule.kind == "int")
    if number is None or math.isnan(number):
        raise SettingsError(name, value, rule.allowed())
    if rule.low is not None and (number < rule.low or (rule.positive and number <= rule.low)):
        raise SettingsError(name, value, rule.allowed())
    if rule.high is not None and number > rule.high:
        raise SettingsError(name, value, rule.allowed())


def exit_on_bad_settings(settings: BaseSettings, paths: tuple[str, ...] = ()) -> None:
    """For commands: one line on stderr and exit status 2 when a setting is invalid; with ``paths``, the
    output paths checked too (:func:`check_output_paths`: exit 2 for a bad value, 1 for a full or read-only disk)."""
    try:
        check_settings(settings)
        if paths:
            check_output_paths(settings, paths)
    except SettingsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    except PathSettingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2 if exc.usage else 1) from None


def _is_bool(value: Any) -> bool:
    if isinstance(value, bool) or value in (0, 1):
        return True
    return isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0")


def _number(value: Any, integer: bool) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return None if integer and isinstance(value, float) and not value.is_integer() else float(value)
    try:
        return float(int(str(value).strip())) if integer else float(str(value).strip())
    except ValueError:
        return None


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _show(value: Any) -> str:
    return str(value) if isinstance(value, (str, int, float)) else repr(value)


#: Folders and files a crawl writes, by setting: (default, "dir" or "file").
OUTPUT_PATHS: dict[str, tuple[str, str]] = {
    "SKILLGRAPH_GRAPHS_DIR": ("graphs", "dir"),
    "SKILLGRAPH_ITEMS_DIR": ("items", "dir"),
    "SKILLGRAPH_STATE_PATH": (".scrapy/skillgraph/state.sqlite3", "file"),
}
#: Less free space than this on the disk of an output path is a full disk.
MIN_FREE_BYTES = 64 * 1024


class PathSettingError(ValueError):
    """An output path a crawl cannot use; ``usage`` when the value itself is wrong (exit 2), else the machine (1)."""

    def __init__(self, name: str, path: str, why: str, usage: bool) -> None:
        self.name, self.path, self.usage = name, path, usage
        super().__init__(f"{name}={path} cannot be used: {why}")


def check_output_paths(settings: BaseSettings, names: tuple[str, ...] = tuple(OUTPUT_PATHS)) -> None:
    """Raise :class:`PathSettingError` for the first output path that is a file, cannot be made or written,
    or sits on a full disk. Nothing is created: a folder that does not exist yet only needs a writable
    nearest existing parent (the components make it when they first write)."""
    for name in names:
        default, kind = OUTPUT_PATHS[name]
        value = str(settings.get(name) or default)
        path = Path(value)
        folder = path if kind == "dir" else path.parent
        if kind == "file" and path.is_dir():
            raise PathSettingError(name, value, "it is a folder, not a file", usage=True)
        existing = folder
        while not existing.exists() and existing != existing.parent:
            if existing.is_symlink():
                raise PathSettingError(name, value, f"{existing} is a broken symbolic link", usage=True)
            existing = existing.parent
        if not existing.is_dir():
            where = "it is a file" if existing == folder else f"{existing} is a file"
            raise PathSettingError(name, value, f"{where}, not a folder", usage=True)
        if not os.access(existing, os.W_OK | os.X_OK):
            why = "the file system is read-only" if _read_only(existing) else "permission denied"
            raise PathSettingError(name, value, f"{existing} is not writable ({why})", usage=False)
        if _read_only(existing):
            raise PathSettingError(name, value, f"{existing} is on a read-only file system", usage=False)
        free = _free_bytes(existing)
        if free is not None and free < MIN_FREE_BYTES:
            raise PathSettingError(name, value, f"the disk holding {existing} is full ({free} bytes free)",
                                   usage=False)


def _read_only(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _free_bytes(path: Path) -> int | None:
    try:
        stat = os.statvfs(path)
    except OSError:
        return None
    return stat.f_bavail * stat.f_frsize
