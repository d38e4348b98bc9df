"""skillgraph: documentation sites to skill graphs (clean markdown + sources.json), on Scrapy."""

__version__ = "0.1.0"
