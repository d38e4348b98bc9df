"""Scrapy settings for skillgraph. Components and defaults come from the add-on."""

import os

BOT_NAME = "skillgraph"
SPIDER_MODULES = ["skillgraph.spiders"]
NEWSPIDER_MODULE = "skillgraph.spiders"
COMMANDS_MODULE = "skillgraph.commands"
ADDONS = {"skillgraph.addon.Addon": 0}
LOG_LEVEL = "INFO"

# Distributed mode from the environment (docs/distributed.md, "Security"): a Redis password given as
# SKILLGRAPH_REDIS_URL stays off command lines (ps), scrapyd's schedule.json and its logs. -s REDIS_URL wins.
if os.environ.get("SKILLGRAPH_REDIS_URL"):
    REDIS_URL = os.environ["SKILLGRAPH_REDIS_URL"]
