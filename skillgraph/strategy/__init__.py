"""How a site is built: the strategy ladder (``llms-full.txt``, ``llms.txt``, sitemaps, a bounded crawl) and
the probes, parsers and enumerations it uses to choose and to list a site's pages.

:mod:`.profiler` runs the ladder for a start URL (:class:`~.profiler.SiteProfiler`);
:mod:`.probes` holds each probe step and the result types; :mod:`.llms` and
:mod:`.sitemaps` parse what the probes fetch; :mod:`.mediawiki` reads a wiki's API;
:mod:`.detect` is the spider behind ``scrapy detect`` and the batch's detection.
The spider middleware that turns a start URL into the strategy's requests is
:mod:`skillgraph.middlewares.strategy`.
"""
