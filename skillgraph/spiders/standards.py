"""Web platform references and Internet standards."""

from __future__ import annotations

from skillgraph.spiders.base import SkillgraphSpider


class MdnWebSpider(SkillgraphSpider):
    """MDN's Web docs (HTML, CSS, JavaScript, Web APIs); the Learn area and other locales are out of scope."""

    name = "mdn_web"
    start_url = "https://developer.mozilla.org/en-US/docs/Web/"
    domain = "mozilla.org"


class IetfRfcsSpider(SkillgraphSpider):
    """The RFC Editor's published RFCs (HTML renderings)."""

    name = "ietf_rfcs"
    start_url = "https://www.rfc-editor.org/rfc/"
    domain = "ietf.org"
