"""Scrapy settings for skillgraph. Components and defaults come from the add-on."""

BOT_NAME = "skillgraph"
SPIDER_MODULES = ["skillgraph.spiders"]
NEWSPIDER_MODULE = "skillgraph.spiders"
COMMANDS_MODULE = "skillgraph.commands"
ADDONS = {"skillgraph.addon.Addon": 0}
LOG_LEVEL = "INFO"
