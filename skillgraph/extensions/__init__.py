"""Scrapy extensions of a build: the crawl timeout (and the download deadline it sets), one line per failed
download, the progress line, the end-of-crawl summary and the stats file.
"""
