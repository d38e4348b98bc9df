"""Is a heading a block page's message, or a documentation topic that names the same thing?

"Page not found", "Oops! That page can't be found.", "Error 404", "Seite nicht gefunden"
and "Too many requests" are what a block page *says*; "Handling 404 errors", "Custom
404 pages", "Rate limits" and "Too many requests in the client" are what a docs page is
*about*. Both hold the same words, so a search for the words cannot tell them apart
(a thin docs page titled "Rate limits" was labelled ``rate-limit``). What tells them
apart is everything else in the heading: a message wraps its core phrase in a few
function words and interjections ("sorry, we", "oops! that", "this page"), a topic in
words of its own ("handling", "errors", "custom", "pages", "client").

So a heading is split into segments at the separators titles use for their site name
("Page not found | Acme Docs", "404: This page could not be found"), and a segment is a
message when a signature's core phrase is in it and at most one other word is not in
:data:`FILLER` (for scripts written without spaces, at most :data:`CJK_CHARS` characters
are left over). The filler is a closed class of English function words, block-page
interjections and the nouns every such message uses (page, site, request...), plus the
same for a few other languages; it names no vendor and no page.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from skillgraph.quality.signatures import Signature

#: Separators between a title's parts: " | ", " · ", " – ", " — ", " - ", " :: ", " » ", ": ", " / ".
_SEPARATOR = re.compile(r"\s+[|·•–—»/-]+\s+|\s*[|·•»]\s*|::|:\s+|\s+-\s+")
_PUNCTUATION = " \t\n!?.,;:()[]{}'\"«»“”‘’*#~_-…¡¿"
_WORD = re.compile(r"[\w'’]+")
#: Left-over characters allowed in a segment whose left-over words are not written with spaces (CJK).
CJK_CHARS = 12
#: Words that may surround a block message's core phrase (lower case, straight apostrophes).
FILLER = frozenset((
    "a", "an", "the", "this", "that", "these", "those", "it", "it's", "its", "is", "was", "are", "were", "be",
    "been", "being", "has", "have", "had", "do", "does", "did", "doing", "done", "not", "no", "nothing", "here",
    "there", "we", "we're", "we've", "you", "you're", "your", "yours", "i", "i'm", "me", "my", "our", "us", "they",
    "them", "can", "can't", "cannot", "could", "couldn't", "would", "will", "won't", "may", "might", "must",
    "should", "to", "of", "for", "in", "on", "at", "by", "from", "with", "and", "or", "but", "so", "if", "as", "oh",
    "uh", "ohh", "uh-oh", "hmm", "hmmm", "ouch", "oops", "oups", "ups", "upps", "whoops", "whoa", "woah", "sorry",
    "ah", "eh", "well", "yikes", "huh", "hey", "hi", "hello", "error", "http", "https", "status", "code", "page",
    "web", "webpage", "site", "website", "server", "request", "requests", "requested", "url", "link", "file",
    "document", "resource", "content", "item", "path", "address", "looking", "look", "find", "found", "seem",
    "seems", "seemed", "exist", "exists", "existed", "anymore", "longer", "available", "moved", "removed",
    "deleted", "please", "try", "again", "later", "just", "now", "wait", "while", "moment", "one", "still",
    "currently", "temporarily", "something", "went", "wrong", "access", "denied", "blocked", "permission",
    "required", "permissions", "allowed", "log", "login", "logged", "sign", "signed", "signin", "continue",
    "proceed", "redirecting", "redirected", "provider", "account", "your", "verify", "verifying", "verification",
    "human", "robot", "bot", "check", "checking", "security", "browser", "connection", "sent", "made", "many",
    "too", "limit", "limits", "rate", "exceeded", "slow", "down", "hold", "on", "sec", "second", "seconds",
    "minute", "minutes", "private", "only", "members", "member", "subscribers", "subscriber", "subscription",
    "subscribe", "read", "reading", "keep", "full", "story", "article", "view", "see", "unlock", "upgrade", "plan",
    "free", "unfortunately", "alas", "la", "le", "les", "l'on", "de", "du", "des", "une", "un", "est", "cette",
    "cet", "ce", "pas", "ne", "n'est", "désolé", "désolée", "el", "lo", "los", "las", "una", "esta", "este", "lo",
    "sentimos", "página", "pagina", "no", "se", "ha", "sido", "il", "è", "stata", "questa", "pagina", "spiacenti",
    "die", "der", "das", "eine", "ein", "diese", "dieser", "leider", "wurde", "ist", "nicht", "seite", "fehler"
))


def segments(heading: str) -> list[str]:
    """The parts of a (lower-cased) heading, split at title separators, stripped of punctuation."""
    parts = (part.strip(_PUNCTUATION) for part in _SEPARATOR.split(heading))
    return [part for part in parts if part]


def _words(text: str) -> list[str]:
    return [w.replace("’", "'").strip("'") for w in _WORD.findall(text)]


def is_message(signature: Signature, segment: str) -> bool:
    """Is ``segment`` ``signature``'s core phrase wrapped in filler (a message), not a topic?"""
    for start, end in signature.spans(segment):
        rest = [w for w in _words(segment[:start] + " " + segment[end:]) if w and w not in FILLER]
        if len(rest) <= 1 or (all(not w.isascii() for w in rest) and sum(map(len, rest)) <= CJK_CHARS):
            return True
    return False


def is_topic(heading: str, signatures: Iterable[Signature]) -> bool:
    """Is the page's main heading a topic: a word outside :data:`FILLER`, and no message?

    "HTTP status codes", "46.10. Python 2 vs. Python 3" are topics; "Whoa there!", "Oops!",
    "Not found" and an empty heading are not. A page about a topic that mentions "you are rate
    limited" in its text is talking about it.
    """
    parts = segments(heading)
    if not parts or any(is_message(s, part) for s in signatures for part in parts if s.search(part)):
        return False
    return any(w not in FILLER for w in _words(parts[0]))


def heading_segments(headings: Iterable[str]) -> list[str]:
    """Every segment of every heading, once (the page's are read by every message signature)."""
    return list(dict.fromkeys(part for heading in headings for part in segments(heading)))


def message_in(signature: Signature, parts: list[str], joined: str) -> bool:
    """Does one of the heading segments carry ``signature``'s message? (``joined``: the parts in one string,
    searched first: most pages' headings hold no core phrase at all.)"""
    return signature.search(joined) and any(signature.search(part) and is_message(signature, part) for part in parts)
