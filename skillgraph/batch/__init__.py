"""``scrapy batch``: detect every site's strategy, then build the sites in bounded subprocesses.

* :mod:`.plan` — the sites of a batch and their order (llms sites first, web crawls last);
* :mod:`.detect` — the detection phase: every site profiled concurrently in one crawler;
* :mod:`.runner` — the run phase: ``scrapy crawl`` per site in its own process group,
  ``--jobs`` at a time, killed as a group when it overruns its wall bound;
* :mod:`.report` — progress lines, the final table and ``batch-report.json``.
"""
