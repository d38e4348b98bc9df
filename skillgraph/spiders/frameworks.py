"""Application frameworks, libraries and self-hosted tools."""

from __future__ import annotations

from skillgraph.spiders.base import SkillgraphSpider


class HuggingfaceDocsSpider(SkillgraphSpider):
    name = "huggingface_docs"
    start_url = "https://huggingface.co/docs"
    domain = "huggingface.co"
    scope = "https://huggingface.co/docs/"


class LangchainSpider(SkillgraphSpider):
    name = "langchain"
    start_url = "https://python.langchain.com/docs/"
    domain = "langchain.com"


class ChakraUiSpider(SkillgraphSpider):
    name = "chakra_ui"
    start_url = "https://chakra-ui.com/docs/"
    domain = "chakra-ui.com"


class UptimeKumaSpider(SkillgraphSpider):
    """Uptime Kuma's documentation is its GitHub wiki."""

    name = "uptime_kuma"
    start_url = "https://github.com/louislam/uptime-kuma/wiki"
    domain = "uptime.kuma.pet"
    scope = "https://github.com/louislam/uptime-kuma/wiki/"
