"""Cloud platforms and infrastructure as code."""

from __future__ import annotations

from skillgraph.spiders.base import SkillgraphSpider


class K8sDocsSpider(SkillgraphSpider):
    name = "k8s_docs"
    start_url = "https://kubernetes.io/docs/"
    domain = "kubernetes.io"


class AwsDocsSpider(SkillgraphSpider):
    name = "aws_docs"
    start_url = "https://docs.aws.amazon.com/"
    domain = "aws.amazon.com"


class TerraformRegistrySpider(SkillgraphSpider):
    name = "terraform_registry"
    start_url = "https://registry.terraform.io/"
    domain = "terraform.io"


class GcpRunSpider(SkillgraphSpider):
    """Cloud Run only: cloud.google.com is far too large to take whole."""

    name = "gcp_run"
    start_url = "https://cloud.google.com/run/docs"
    domain = "cloud.google.com"
    scope = "https://cloud.google.com/run/docs/"
