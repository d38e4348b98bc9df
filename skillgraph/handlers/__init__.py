"""Download handlers: Scrapy's HTTP/1.1 handler, able to go through SOCKS5 proxies."""
