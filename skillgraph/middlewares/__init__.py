"""Scrapy middlewares on every request of a build: the strategy (a start URL made the site's requests), the
page budget, recency and conditional requests, politeness, meta refresh, proxies, the SSRF guard, JOBDIR resume.

Their paths are the ones users name in ``DOWNLOADER_MIDDLEWARES`` / ``SPIDER_MIDDLEWARES``: they stay stable.
"""
