"""Wikis: three MediaWiki sites (enumerated through their API) and OpenWrt's DokuWiki."""

from __future__ import annotations

from skillgraph.spiders.mediawiki import MediaWikiSpider
from skillgraph.spiders.sections import SectionsSpider


class ArchWikiSpider(MediaWikiSpider):
    name = "arch_wiki"
    start_url = "https://wiki.archlinux.org/"
    api = "https://wiki.archlinux.org/api.php"
    domain = "archlinux.org"


class GentooWikiSpider(MediaWikiSpider):
    name = "gentoo_wiki"
    start_url = "https://wiki.gentoo.org/"
    api = "https://wiki.gentoo.org/api.php"
    domain = "gentoo.org"


class MikrotikWikiSpider(MediaWikiSpider):
    name = "mikrotik_wiki"
    start_url = "https://wiki.mikrotik.com/"
    api = "https://wiki.mikrotik.com/api.php"
    domain = "mikrotik.com"


class OpenwrtWikiSpider(SectionsSpider):
    """DokuWiki: its sitemap lists every page; only the docs and the Table of Hardware are kept."""

    name = "openwrt_wiki"
    start_url = "https://openwrt.org/docs/start"
    domain = "openwrt.org"
    scope = "https://openwrt.org/"
    sections = ("/docs/", "/toh/")
    strategy = "sitemap"
