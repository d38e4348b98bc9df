"""The ``scrapy`` commands skillgraph adds or replaces (``COMMANDS_MODULE``): crawl, detect, batch, scrape,
markdown, assess, worker, search, mcp, replay, assemble, list; and the settings check they all run first.

Each module is one command; heavy imports happen in ``run`` (Scrapy imports every command module to list them).
"""
