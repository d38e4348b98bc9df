"""One tier's response turned into an assessed :class:`Attempt` (pure: no state, no stats).

HTML and rendered pages are extracted with the project's extractor and assessed
on markdown and raw markup; a ``negotiated`` answer is used only when it is
markdown (``text/markdown`` / ``text/x-markdown``, not a body that opens like
HTML) that keeps the HTML page's code as fenced blocks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from skillgraph.extract.api import Extraction, extract_tree
from skillgraph.graph.links import link_offsets
from skillgraph.graph.llms import describe
from skillgraph.quality import FAIL, assess
from skillgraph.quality.structure import markdown_lines
from skillgraph.render.shell import Shell, detect_shell
from skillgraph.strategy.llms import looks_like_html
from skillgraph.tiers.attempt import Attempt, code_fences_kept

if TYPE_CHECKING:
    from lxml import etree
    from scrapy.http import Response

MARKDOWN_TYPES = ("text/markdown", "text/x-markdown")
#: A page that passes the gates with this much markdown is no client-side shell.
SHELL_CHECK_BELOW = 2000
NOT_A_SHELL = Shell(False, "passed the gates with content", -1, 0, 1)


def response_headers(response: Response) -> dict[str, str]:
    return {k.decode("latin-1"): b", ".join(v).decode("latin-1") for k, v in response.headers.items()}


def page_attempt(tier: str, response: Response, threshold: float, title_hint: str = "",
                 root: etree._Element | None = None) -> tuple[Attempt, Shell, int]:
    """An HTML page (``html``) or a rendered DOM (``render``): the attempt, the shell verdict, ``<pre>`` count.

    ``title_hint`` is used when the page has no title of its own (an llms.txt entry's name); ``root`` is the
    page already parsed (default: Scrapy's selector tree).
    """
    from scrapy.http import TextResponse  # here: the page workers use this module without Scrapy

    if not isinstance(response, TextResponse):
        return Attempt.failed(tier, response.url, f"the {tier} response has no text", response.status), NOT_A_SHELL, 0
    if root is None:
        root = response.selector.root
    attempt, shell, code_blocks, _ = markup_attempt(tier, response.url, response.status, response.text,
                                                    response_headers(response), root, threshold, title_hint)
    return attempt, shell, code_blocks


@dataclass
class PageNotes:
    """What the graph's commit needs of a page's markdown, read from the scan the workers already made.

    The extractor's self-check scanned the markdown and the quality gates read the same scan: where its
    prose links start (:func:`skillgraph.graph.links.link_offsets`: the commit splices links, no scan) and
    its ``llms.txt`` description (:func:`skillgraph.graph.llms.describe`) cost no second scan here.
    """

    link_offsets: bytes = b""
    description: str | None = None  #: None: described at commit (a page without a title of its own)


def markup_attempt(tier: str, url: str, status: int, text: str, headers: dict[str, str],
                   root: etree._Element | None, threshold: float,
                   title_hint: str = "") -> tuple[Attempt, Shell, int, PageNotes]:
    """:func:`page_attempt` of a page given as its parts: no Scrapy response (the page pool's workers build none).

    ``text`` is the decoded page (the quality gates read block signatures in the raw markup), ``root`` its tree.
    """
    extraction = extract_tree(root, url) if root is not None else Extraction("", "", None)
    title = extraction.title or title_hint
    notes = PageNotes()
    if extraction.markdown:
        lines = markdown_lines(extraction.markdown)  # the self-check's scan (cached), which the gates read next
        notes.link_offsets = link_offsets(extraction.markdown, lines)
        notes.description = describe(extraction.markdown, title, lines) if title else None
    assessment = assess(text, markdown=extraction.markdown, title=title, status=status,
                        headers=headers, url=url, threshold=threshold)
    if tier != "html" or (assessment.passed and len(extraction.markdown) >= SHELL_CHECK_BELOW):
        shell = NOT_A_SHELL  # rendered, or real content passed the gates: nothing to look for
    else:
        shell = detect_shell(root, url)
    veto = f"client-side-rendered shell ({shell.reason})" if shell.is_shell else ""
    if not veto and extraction.structure.status == FAIL:  # the self-check failed on every candidate element
        veto = f"structure self-check failed ({extraction.structure.detail})"
    attempt = Attempt.assessed(tier, url, title, extraction.markdown, assessment, status, headers, veto)
    attempt.reextracted = extraction.reextracted or ""
    # Only the next tier's check reads it (a negotiated answer must keep the page's code): counted when one may come.
    code_blocks = sum(1 for _ in root.iter("pre")) if root is not None and not attempt.passed else 0
    return attempt, shell, code_blocks, notes


def is_markdown_answer(response: Response) -> bool:
    from scrapy.http import TextResponse

    ctype = (response.headers.get(b"Content-Type") or b"").decode("latin-1").lower()
    head = response.text[:256] if isinstance(response, TextResponse) else "<html"
    return ctype.startswith(MARKDOWN_TYPES) and not looks_like_html(head)


def negotiated_attempt(response: Response, threshold: float, code_blocks: int, title: str) -> Attempt:
    """The answer to ``Accept: text/markdown``; ``title`` is used when the markdown has no H1."""
    headers = response_headers(response)
    if not is_markdown_answer(response):
        ctype = headers.get("Content-Type", "").split(";")[0] or "no type"
        attempt = Attempt.failed("negotiated", response.url,
                                 f"answered {ctype} (HTTP {response.status}), not text/markdown", response.status)
        from scrapy.http import TextResponse

        if response.status >= 400 and isinstance(response, TextResponse) and response.text:
            attempt.block = assess(response.text, status=response.status, headers=headers, url=response.url,
                                   threshold=threshold).block
        return attempt
    from scrapy.http import TextResponse

    assert isinstance(response, TextResponse)
    text = response.text
    assessment = assess(None, markdown=text, title=title, status=response.status, headers=headers,
                        url=response.url, threshold=threshold)
    lost = code_fences_kept(text, code_blocks)
    return Attempt.assessed("negotiated", response.url, title, text, assessment, response.status, headers,
                            f"code fences lost: {lost}" if lost else "")
