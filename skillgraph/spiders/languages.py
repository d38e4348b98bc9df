"""Programming languages and their core libraries."""

from __future__ import annotations

from skillgraph.spiders.base import SkillgraphSpider


class PythonDocsSpider(SkillgraphSpider):
    name = "python_docs"
    start_url = "https://docs.python.org/3/"
    domain = "python.org"


class RustBookSpider(SkillgraphSpider):
    name = "rust_book"
    start_url = "https://doc.rust-lang.org/book/"
    domain = "rust-lang.org"


class PandasDocsSpider(SkillgraphSpider):
    name = "pandas_docs"
    start_url = "https://pandas.pydata.org/docs/"
    domain = "pydata.org"
