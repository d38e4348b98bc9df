"""Databases and data stores."""

from __future__ import annotations

from skillgraph.spiders.base import SkillgraphSpider


class PostgresDocsSpider(SkillgraphSpider):
    name = "postgres_docs"
    start_url = "https://www.postgresql.org/docs/current/"
    domain = "postgresql.org"


class RedisDocsSpider(SkillgraphSpider):
    name = "redis_docs"
    start_url = "https://redis.io/docs/latest/"
    domain = "redis.io"


class MariadbSpider(SkillgraphSpider):
    """The MariaDB Knowledge Base's documentation, not mariadb.com's product pages."""

    name = "mariadb"
    start_url = "https://mariadb.com/kb/en/documentation/"
    domain = "mariadb.com"
    scope = "https://mariadb.com/kb/en/"
