"""Operating systems and network appliances: handbooks and admin guides."""

from __future__ import annotations

from skillgraph.spiders.base import SkillgraphSpider


class PfsenseDocsSpider(SkillgraphSpider):
    name = "pfsense_docs"
    start_url = "https://docs.netgate.com/pfsense/en/latest/"
    domain = "netgate.com"


class KernelDocsSpider(SkillgraphSpider):
    name = "kernel_docs"
    start_url = "https://docs.kernel.org/"
    domain = "kernel.org"


class FedoraDocsSpider(SkillgraphSpider):
    """The docs home is one Antora component; the guides are its siblings under ``/en-US/``."""

    name = "fedora_docs"
    start_url = "https://docs.fedoraproject.org/en-US/docs/"
    domain = "fedoraproject.org"
    scope = "https://docs.fedoraproject.org/en-US/"


class RhelDocsSpider(SkillgraphSpider):
    name = "rhel_docs"
    start_url = "https://docs.redhat.com/en/documentation/red_hat_enterprise_linux/"
    domain = "redhat.com"


class FreebsdHandbookSpider(SkillgraphSpider):
    name = "freebsd_handbook"
    start_url = "https://docs.freebsd.org/en/books/handbook/"
    domain = "freebsd.org"
