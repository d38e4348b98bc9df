"""Private internals of Scrapy, Twisted and the Scrapy plugins: the only place skillgraph touches them.

A private attribute (``engine._slot``), a private class (``_ScrapyAgent``) or
a private hook a subclass overrides (``_download_request``) can change in any
release without a deprecation. Everywhere else skillgraph calls the small
named functions and hook classes of this package; each one's docstring names
the private attribute it wraps, why skillgraph needs it and the versions it was
checked against (:data:`CHECKED_VERSIONS`, the pins of ``requirements.txt``).
``tests/test_compat.py`` exercises every wrapper against the installed
libraries and fails loudly when an upgrade moves one, or when an installed
version is not the one checked here.

Upgrading a pinned library: run ``tests/test_compat.py``, re-read each wrapper
of that library against the new source, then update its pin in
``requirements.txt``, :data:`CHECKED_VERSIONS` and the "Checked against"
lines together.

One module per library, imported on demand (this package imports none of them:
:mod:`~skillgraph.compat.scrapy_splash` must patch Scrapy before scrapy-splash
loads, :mod:`~skillgraph.compat.scrapy_playwright` loads Playwright):

* :mod:`skillgraph.compat.scrapy`: the engine's slot, the downloader's slots,
  the HTTP/1.1 handler's per-request agent;
* :mod:`skillgraph.compat.twisted`: the connection-pool key of an ``Agent``;
* :mod:`skillgraph.compat.scrapy_redis`: (de)serialising a queued request;
* :mod:`skillgraph.compat.scrapy_playwright`: the handler's start and browser-download hooks;
* :mod:`skillgraph.compat.scrapy_splash`: the slot key and argument dedup hooks of its middlewares.
"""

from __future__ import annotations

from importlib.metadata import version

#: Distribution name -> the version every wrapper of this package was checked against.
CHECKED_VERSIONS: dict[str, str] = {
    "Scrapy": "2.19.0",
    "Twisted": "26.10.0",
    "scrapy-redis": "0.9.1",
    "scrapy-playwright": "0.0.48",
    "scrapy-splash": "0.11.1",
}


def installed_versions() -> dict[str, str]:
    """The installed version of each library in :data:`CHECKED_VERSIONS` (``importlib.metadata``)."""
    return {name: version(name) for name in CHECKED_VERSIONS}


def unchecked_versions() -> dict[str, tuple[str, str]]:
    """Libraries installed at another version than the one checked: name -> (checked, installed)."""
    installed = installed_versions()
    return {name: (checked, installed[name]) for name, checked in CHECKED_VERSIONS.items()
            if installed[name] != checked}
