"""Block-page signatures as data: what marks a page as a challenge, a block or an error.

Each :class:`Signature` names the label it proves and where it looks:

``html``     the page's live markup: tags and attributes, inline scripts, comments, never
             its text (``cf-chl`` ids, ``g-recaptcha`` widgets, ``jschl`` form fields). A
             docs page quoting ``<div class="h-captcha">`` in a ``<pre>`` has it as text.
``element``  the markup with its text (a vendor's element and what it holds:
             ``<span class="cf-error-code">1020``)
``title``    the page's ``<title>`` and first ``<h1>``/``<h2>``. Vendor titles are searched as
             they are; the kinds' and the generic checks' wording must be the heading's
             *message* (:mod:`skillgraph.quality.message`): "Page not found" is a 404's
             heading, "Handling 404 errors" a docs topic
``text``     the page's visible text (tags stripped, entities decoded, ``<noscript>`` kept)
``header``   one response header, as ``name: value`` in lower case
``form``     the live markup, on a thin page that is no documentation (login forms)
``stub``     the live markup, on a near-empty page (under 200 characters of content): a
             vendor's script on a page that shows nothing is its challenge (Cloudflare
             bot-fight mode injects ``__CF$cv$params`` into every page of a site, so it
             proves nothing on a page with content)

Wording is what documentation pages quote, so generic wording (``needs``) counts only
when the page also *works* like a block page: it shows ``needs`` of the
:data:`MECHANICS` of the signature's ``group`` (a challenge sets a cookie and reloads,
submits a hidden form, loads a CAPTCHA, asks for JavaScript, shows a Ray ID; a login
wall has a password field, a form posting to a sign-in URL, SSO buttons; a paywall
links to plans). A help-centre answer about "Checking your browser before accessing"
has the words and none of the mechanics.

Markup, title and text signatures only count on a *thin* page (under 2,000 characters
of main content; the generic kinds' wording only on a *message page*, see
docs/quality.md) or a 4xx/5xx response. ``decisive`` header signatures
(``cf-mitigated: challenge``) count on any page. A ``vendor`` header signature
(``server: cloudflare``) only names who answered a 403/429/503: it is on every
response of a protected site.

Patterns are lower case and run on lower-cased inputs (faster than ``re.IGNORECASE``).
Order matters: the first matching signature of the highest ``rank`` wins (vendor
challenges and blocks outrank the generic kinds). docs/quality.md lists the labels.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

#: Labels, most specific first. Vendors, then kinds.
VENDOR_LABELS = (
    "cloudflare-challenge",
    "cloudflare-block",
    "akamai",
    "imperva",
    "perimeterx",
    "datadome",
    "sucuri",
    "aws-waf",
    "ddos-guard",
    "kasada",
    "f5-asm",
    "wordfence",
    "anubis",
    "vercel-challenge",
)
KIND_LABELS = (
    "captcha",
    "challenge",
    "login-wall",
    "paywall",
    "not-found",
    "rate-limit",
    "forbidden",
    "legal-block",
    "client-error",
    "server-error",
)
LABELS = VENDOR_LABELS + KIND_LABELS

#: Rank of each kind of evidence: a higher rank wins over a lower one.
RANK_VENDOR, RANK_CAPTCHA, RANK_KIND = 3, 2, 1
#: Human checks of no named vendor: a CAPTCHA widget, or a browser/bot check.
HUMAN_CHECK_LABELS = frozenset({"captcha", "challenge"})

#: Groups of :data:`MECHANICS` a signature's ``needs`` counts in.
CHALLENGE, LOGIN, PAYWALL = "challenge", "login", "paywall"


def _compile(pattern: str) -> tuple[tuple[str, re.Pattern[str] | None], ...]:
    """One entry per top-level alternative: its required literal prefix, and its regex unless it is all literal.

    ``str`` substring search is several times faster than the regex engine's on a 256 kB
    page: a branch that is a plain literal is only searched as a substring, and a branch
    opening with a literal runs its regex only on a text that holds the literal (it cannot
    match elsewhere).
    """
    branches = []
    for branch in split_alternatives(pattern):
        prefix, whole = literal_prefix(branch)
        branches.append((prefix, None if whole else re.compile(branch)))
    return tuple(branches)


def _search(branches: tuple[tuple[str, re.Pattern[str] | None], ...], text: str) -> bool:
    return any((prefix in text) and (regex is None or regex.search(text) is not None) for prefix, regex in branches)


@dataclass(frozen=True)
class Signature:
    label: str
    where: str  # "html" | "element" | "title" | "text" | "header" | "form" | "stub"
    pattern: str
    note: str
    decisive: bool = False  # header signatures: counts whatever the content
    vendor: bool = False  # header signatures: names who answered a blocking status
    needs: int = 0  #: distinct MECHANICS of ``group`` the page must show for this wording to count
    group: str = CHALLENGE
    #: one (required literal prefix, regex or None) per top-level alternative
    branches: tuple[tuple[str, re.Pattern[str] | None], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "branches", _compile(self.pattern))

    def search(self, text: str) -> bool:
        """Does the (lower-cased) text match?"""
        return _search(self.branches, text)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Where each branch first matches in ``text`` (for the message-heading test)."""
        found = []
        for prefix, regex in self.branches:
            if prefix not in text:
                continue
            if regex is None:
                start = text.find(prefix)
                found.append((start, start + len(prefix)))
            elif (match := regex.search(text)) is not None:
                found.append(match.span())
        return found

    @property
    def rank(self) -> int:
        if self.label in VENDOR_LABELS:
            return RANK_VENDOR
        return RANK_CAPTCHA if self.label in HUMAN_CHECK_LABELS else RANK_KIND


@dataclass(frozen=True)
class Mechanic:
    """Something a block page *does* (a cookie set before a reload, a hidden form posted to a challenge URL)."""

    name: str
    group: str  # CHALLENGE | LOGIN | PAYWALL
    where: str  # "tags" (live markup, scripts included) | "noscript" (its text) | "text" (visible text)
    pattern: str
    branches: tuple[tuple[str, re.Pattern[str] | None], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "branches", _compile(self.pattern))

    def search(self, text: str) -> bool:
        return _search(self.branches, text)


#: The shortest substring that may stand for several literal prefixes (:func:`shared_gates`).
GATE_CHARS = 4


def shared_gates(needles: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Literals grouped under substrings they share: ``{"captcha": ("g-recaptcha", "h-captcha", ...)}``.

    A needle absent from a text needs no search of its own when a substring of it is absent:
    one search for ``captcha`` stands for the eleven needles that hold it. Greedy: the
    substring (``GATE_CHARS`` or more) held by the most needles left (at least two; the
    longest, then the first in order, on a tie) gates them, until none is shared; every
    needle left is its own gate. Computed from the signatures alone, once.
    """
    left = sorted(set(needles))
    gates: dict[str, tuple[str, ...]] = {}
    while True:
        held: Counter[str] = Counter()
        for needle in left:
            held.update({needle[i:j] for i in range(len(needle)) for j in range(i + GATE_CHARS, len(needle) + 1)})
        best = min(held, key=lambda gate: (-held[gate], -len(gate), gate), default=None)
        if best is None or held[best] < 2:
            break
        gates[best] = tuple(needle for needle in left if best in needle)
        left = [needle for needle in left if best not in needle]
    gates.update((needle, (needle,)) for needle in left)
    return gates


class SignatureGroup:
    """Signatures searched in the same (long) text, their literal prefixes searched under :func:`shared_gates`.

    A thin page's whole markup is searched for some forty markers, one ``str`` search each
    (most of a thin page's assessment): the gates cut that to about twenty-five on a page that
    has none of them. :meth:`matching` equals ``[s for s in signatures if s.search(text)]``.
    """

    def __init__(self, signatures: Iterable[Signature]) -> None:
        self.signatures = tuple(signatures)
        self.gates = shared_gates(prefix for s in self.signatures for prefix, _ in s.branches if prefix)

    def matching(self, text: str) -> list[Signature]:
        """The signatures that match ``text``, in order."""
        present = {needle for gate, needles in self.gates.items() if gate in text
                   for needle in needles if needle == gate or needle in text}
        present.add("")  # a branch with no literal prefix: its regex decides
        return [s for s in self.signatures
                if any(prefix in present and (regex is None or regex.search(text) is not None)
                       for prefix, regex in s.branches)]


def split_alternatives(pattern: str) -> list[str]:
    """``a|b(c|d)|e`` -> ``["a", "b(c|d)", "e"]``: split on ``|`` outside groups and classes."""
    parts, depth, in_class, start, i = [], 0, False, 0, 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            parts.append(pattern[start:i])
            start = i + 1
        i += 1
    return [*parts, pattern[start:]]


_META = frozenset(".^$*+?{}[]|()\\")


def literal_prefix(branch: str) -> tuple[str, bool]:
    """The literal text every match of ``branch`` starts with, and whether that is all of it.

    Leading ``\\b`` (zero-width) is passed over; an escaped punctuation mark is literal;
    a character followed by a quantifier is not required, so the prefix stops before it.
    """
    i = start = 0
    while branch.startswith("\\b", i):
        i = start = i + 2
    chars: list[str] = []
    while i < len(branch):
        char = branch[i]
        if char == "\\" and i + 1 < len(branch) and not branch[i + 1].isalnum():
            char, step = branch[i + 1], 2
        elif char in _META:
            break
        else:
            step = 1
        if branch[i + step:i + step + 1] in ("*", "?", "{", "+"):
            break
        chars.append(char)
        i += step
    return "".join(chars), i == len(branch) and not start  # a skipped \\b still needs the regex


M = Mechanic
#: What block pages do, by group. Read on thin pages only, one when asked (page.py ``Page.shows``).
MECHANICS: tuple[Mechanic, ...] = (
    # Challenges: scripts that set a cookie or solve a puzzle, then reload or submit.
    M("cookie-script", CHALLENGE, "tags", r"document\.cookie\s*=|document\[[^\[\]]{1,40}\]\s*=|\$\.cookie\("),
    M("reload", CHALLENGE, "tags", r"location\.reload|location\.replace\(|location\.href\s*=|window\.location\s*=|"
      r"location\[[^\[\]]{1,40}\]\(|\.submit\(\)|onload\s*=\s*[\"']?[^\"'<>]{0,80}\.submit"),
    M("challenge-form", CHALLENGE, "tags", r"<form\b[^<>]{0,400}\baction\s*=\s*[\"']?[^\"'\s<>]{0,200}"
      r"(?:challenge|captcha|verif|chk|check|cdn-cgi|well-known|/__)"),
    M("obfuscated-script", CHALLENGE, "tags", r"!\+\[\]|_0x[0-9a-f]{4}|\\x[0-9a-f]{2}\\x[0-9a-f]{2}\\x[0-9a-f]{2}|"
      r"eval\(|atob\("),
    # Hashing *called* in a script (a function named ``vsha256h2q_u32`` in a URL is not a puzzle).
    M("proof-of-work", CHALLENGE, "tags", r"crypto\.subtle|proof.of.work|sha-?256\s*\("),
    M("captcha-widget", CHALLENGE, "tags", r"captcha|turnstile|geetest|arkoselabs"),
    # A page that *says* "enable cookies" may be a help article; one whose <noscript> says so depends on its script.
    M("needs-javascript", CHALLENGE, "noscript", r"(?:enable|turn on|activate|allow|switch on) (?:your )?"
      r"(?:javascript|js\b|cookies)|"
      r"javascript (?:and cookies )?(?:is |are )?(?:required|disabled|must be enabled|is not enabled)|"
      r"cookies (?:are |must be )?(?:required|disabled|enabled)|requires? (?:javascript|cookies)|"
      r"(?:does not|doesn't) support javascript|turn javascript on"),
    M("block-id", CHALLENGE, "text", r"ray id:? ?[0-9a-f]{8,}|incident id:? ?[0-9a-z-]{4,}|"
      r"support id(?: is)?:? ?\d{4,}|reference #? ?\d+\.[0-9a-f]+|request id:? ?[0-9a-f-]{8,}|"
      r"event id:? ?[0-9a-f-]{8,}|ip address:? \d{1,3}\.\d{1,3}\.|your ip:? \d{1,3}\.\d{1,3}\.|"
      r"client ip:? \d{1,3}\.\d{1,3}\."),
    # Login walls: a password field, a form or links that go to a sign-in service, a sign-in widget.
    M("password-field", LOGIN, "tags", r"<input\b[^<>]{0,500}\btype\s*=\s*[\"']?password"),
    M("login-form", LOGIN, "tags", r"<form\b[^<>]{0,400}\baction\s*=\s*[\"']?[^\"'\s<>]{0,200}(?:log_?in|sign_?in|"
      r"sign-in|logon|session|auth|sso|saml|adfs|oauth|openid)"),
    M("sso-post", LOGIN, "tags", r"samlrequest|samlresponse|relaystate"),
    M("auth-link", LOGIN, "tags", r"href\s*=\s*[\"']?[^\"'\s<>]{0,200}/(?:oauth2?|sso|saml2?|openid(?:-connect)?)\b|"
      r"href\s*=\s*[\"']?[^\"'\s<>]{0,200}/auth/(?:oauth|sso|saml|openid|google|github|gitlab|microsoft|azure|okta)"),
    M("signin-widget", LOGIN, "tags", r"sign-?in[\w.-]{0,40}\.js|login[\w.-]{0,40}\.js|auth0-lock|firebaseui"),
    # Paywalls: a link to the plans, a locked article.
    M("plans-link", PAYWALL, "tags", r"href\s*=\s*[\"']?[^\"'\s<>]{0,200}/(?:subscribe|subscription|membership|"
      r"pricing|plans|upgrade|premium|join)\b"),
    M("locked-article", PAYWALL, "tags", r"\"isaccessibleforfree\" *: *\"?false"),
)

S = Signature
SIGNATURES: tuple[Signature, ...] = (
    # Cloudflare: managed / JS challenge ("Just a moment..."), then firewall blocks.
    S("cloudflare-challenge", "header", r"^cf-mitigated: *challenge", "Cloudflare challenge header", decisive=True),
    S("cloudflare-challenge", "html", r"cf[-_]chl[-_]|__cf_chl_", "challenge form/script ids (cf-chl-*)"),
    S("cloudflare-challenge", "html", r"/cdn-cgi/challenge-platform/", "challenge platform script"),
    S("cloudflare-challenge", "html", r"jschl[-_](?:vc|answer)|/cdn-cgi/l/chk_jschl", "IUAM jschl form fields"),
    S("cloudflare-challenge", "stub", r"__cf\$cv\$params|/cdn-cgi/bm/|/cdn-cgi/challenge-platform/",
      "bot-fight-mode script on a near-empty page"),
    S("cloudflare-challenge", "html", r"cf-browser-verification|cf-im-under-attack|cf-spinner", "IUAM markup"),
    S("cloudflare-challenge", "title", r"^\s*just a moment\.\.\.", "'Just a moment...' title"),
    S("cloudflare-challenge", "html", r"cf-captcha-container|cf_captcha_kind|cf-turnstile-wrapper",
      "Cloudflare CAPTCHA challenge form"),
    S("cloudflare-challenge", "text", r"checking (?:if the site connection is secure|your browser before accessing)"
      r".{0,300}cloudflare|ddos protection by cloudflare", "'Checking your browser' ... Cloudflare", needs=1),
    S("cloudflare-block", "title", r"used cloudflare to restrict access", "firewall rule block title"),
    S("cloudflare-block", "title", r"attention required!? \| cloudflare", "'Attention Required! | Cloudflare'"),
    S("cloudflare-block", "text", r"sorry, you have been blocked", "'Sorry, you have been blocked'", needs=1),
    S("cloudflare-block", "element", r"cf-error-code\"?>\s*10\d\d\b", "Cloudflare error 10xx (access denied)"),
    S("cloudflare-block", "text", r"\berror (?:code:? )?10(?:0\d|1\d|20)\b.{0,80}(?:cloudflare|ray id)",
      "Cloudflare error 1000-1020 text"),
    S("cloudflare-block", "header", r"^server: *cloudflare", "Cloudflare edge", vendor=True),
    # Akamai (edge "Access Denied" with a Reference number; Bot Manager cookies).
    S("akamai", "text", r"reference #\s?\d+\.[0-9a-f]+\.\d+\.[0-9a-f]+", "edge 'Reference #18.xxxx' id"),
    S("akamai", "text", r"errors\.edgesuite\.net", "edgesuite error host"),
    S("akamai", "header", r"^server: *akamaighost", "AkamaiGHost server", vendor=True),
    S("akamai", "header", r"^set-cookie: *(?:_abck|ak_bmsc|bm_sz)=", "Bot Manager cookie", vendor=True),
    # Imperva / Incapsula.
    S("imperva", "html", r"_incapsula_resource", "Incapsula resource iframe/script"),
    S("imperva", "text", r"incapsula incident id|request unsuccessful\. incapsula", "Incapsula incident text"),
    S("imperva", "header", r"^x-iinfo:|^x-cdn: *(?:incapsula|imperva)", "Incapsula headers", vendor=True),
    S("imperva", "header", r"^set-cookie: *(?:incap_ses_|visid_incap_)", "Incapsula cookies", vendor=True),
    # PerimeterX / HUMAN.
    S("perimeterx", "html", r"px-captcha|captcha\.px-cdn\.net|client\.perimeterx\.net", "px-captcha widget"),
    S("perimeterx", "html", r"window\._px(?:appid|uuid|jsclientsrc)\b", "window._pxAppId"),
    S("perimeterx", "text", r"press (?:&|and) hold", "'Press & Hold' human check", needs=1),
    S("perimeterx", "header", r"^set-cookie: *_px[23]?=", "PerimeterX cookie", vendor=True),
    # DataDome.
    S("datadome", "html", r"captcha-delivery\.com", "DataDome captcha host"),
    S("datadome", "html", r"var dd *= *\{|datadome\b", "DataDome challenge script"),
    S("datadome", "header", r"^x-datadome(?:-cid)?:|^x-dd-b:", "DataDome headers", vendor=True),
    S("datadome", "header", r"^set-cookie: *datadome=", "DataDome cookie", vendor=True),
    # Sucuri CloudProxy.
    S("sucuri", "html", r"sucuri_cloudproxy_js|sucuri_cloudproxy_uuid", "CloudProxy JS cookie challenge"),
    S("sucuri", "text", r"sucuri website firewall|cloudproxy\.sucuri|sucuri\.net/", "Sucuri firewall page"),
    S("sucuri", "header", r"^x-sucuri-block:", "Sucuri block header", decisive=True),
    S("sucuri", "header", r"^x-sucuri-id:|^server: *sucuri", "Sucuri edge", vendor=True),
    # AWS WAF (challenge/captcha actions, CloudFront 403 "Request blocked").
    S("aws-waf", "header", r"^x-amzn-waf-action: *(?:challenge|captcha|block)", "WAF action header", decisive=True),
    S("aws-waf", "html", r"awswaf|aws-waf-token|\.token\.awswaf\.com", "AWS WAF challenge script"),
    S("aws-waf", "text", r"request blocked\..{0,400}cloudfront", "CloudFront 403 'Request blocked'"),
    # DDoS-Guard.
    S("ddos-guard", "html", r"ddos-guard|check\.ddos-guard\.net", "DDoS-Guard check page"),
    S("ddos-guard", "header", r"^server: *ddos-guard|^set-cookie: *__ddg[12_]", "DDoS-Guard edge", vendor=True),
    # Others seen in front of docs sites.
    S("kasada", "html", r"kpsdk\b|/ips\.js\?", "Kasada KPSDK script"),
    S("f5-asm", "text", r"the requested url was rejected\. please consult with your administrator", "F5 ASM"),
    S("wordfence", "text", r"generated by wordfence|access to this site has been limited by the site owner",
      "Wordfence block"),
    S("anubis", "html", r"anubis_challenge|within\.website/x/cmd/anubis|id=\"anubis_", "Anubis proof-of-work"),
    S("anubis", "title", r"making sure you(?:'|’)re not a bot", "Anubis title"),
    S("vercel-challenge", "title", r"vercel security checkpoint", "Vercel checkpoint"),
    S("vercel-challenge", "header", r"^x-vercel-mitigated: *challenge", "Vercel challenge header", decisive=True),
    # CAPTCHA widgets and wording (any vendor).
    S("captcha", "html", r"g-recaptcha|google\.com/recaptcha|recaptcha/api\.js", "reCAPTCHA widget"),
    S("captcha", "html", r"h-captcha|hcaptcha\.com/1/api\.js", "hCaptcha widget"),
    S("captcha", "html", r"cf-turnstile|challenges\.cloudflare\.com/turnstile", "Turnstile widget"),
    S("captcha", "html", r"funcaptcha|arkoselabs\.com|geetest", "FunCaptcha / GeeTest"),
    S("captcha", "stub", r"/\.well-known/sgcaptcha/|/_incapsula_resource|/_sec/cp_challenge/|/\.within\.website/",
      "a vendor challenge script on a near-empty page"),
    S("captcha", "text", r"verify (?:that )?you(?: are|'re) (?:a )?human|are you a robot|not a robot|"
      r"complete the (?:security check|captcha)|prove you(?:'re| are) human", "human check text",
      needs=1),
    # Browser and bot checks of no named vendor: their wording, with the mechanics of a challenge.
    S("challenge", "title", r"checking (?:your|the) (?:browser|connection|site connection|request)|"
      r"verif(?:y|ying|ication of) (?:your|the) (?:browser|connection|request)|"
      r"(?:verify|verifying|confirm|prove) (?:that )?you(?:'re| are) (?:a )?(?:human|not a (?:ro)?bot)|"
      r"(?:browser|bot|security|captcha|access|human|robot) (?:check|verification|checkpoint|challenge)|"
      r"are you (?:a )?(?:human|robot)|ddos protection|pardon our interruption|attention required|unusual traffic|"
      r"one more step|bot protection|anti-?bot|i'?m not a robot|not a (?:ro)?bot|human verification",
      "browser / bot check heading", needs=1),
    S("challenge", "title", r"just a (?:moment|second|sec)\b|one moment|please (?:wait|stand by|hold on)|"
      r"wait a (?:moment|second)|loading|einen moment|un (?:instant|momento)|один момент|请稍候|"
      r"しばらくお待ちください",
      "'please wait' heading, with two mechanics of a challenge", needs=2),
    S("challenge", "text", r"checking (?:your|the) (?:browser|connection)|"
      r"verifying (?:your|the) (?:browser|connection)|this process is automatic|"
      r"redirect to your requested content|needs to review the security of your connection|"
      r"made us think you (?:were|are) a bot|unusual traffic from your (?:computer )?network|"
      r"checks? (?:to see )?(?:if|that|whether) (?:it'?s really )?you(?:'re| are)? (?:a human|human|not a (?:ro)?bot|"
      r"sending the requests)|"
      r"verif(?:y|ies) (?:that |whether |if )?you(?:'re| are)? (?:a human|human|not a (?:ro)?bot)",
      "browser / bot check text", needs=1),
    # Kinds. Their titles are read as a heading's message (skillgraph.quality.message), not searched.
    S("login-wall", "form", r"<input\b[^<>]{0,500}\btype\s*=\s*[\"']?password", "password form, little else"),
    S("login-wall", "title", r"\blog ?in\b|\bsign ?in\b|\bsign on\b|\blog on\b|login required|authentication required|"
      r"identity provider|single sign-on|\bsso\b|(?:space|site|page|wiki|workspace|docs|documentation) is private|"
      r"private (?:space|site|page|wiki|docs)|members? area", "sign-in heading", needs=1, group=LOGIN),
    S("login-wall", "text", r"you (?:must|need to) (?:be logged in|be signed in|log in|sign in)|"
      r"please (?:log|sign) in to (?:continue|view|access)|log in to (?:view|see|read|access|continue)|"
      r"sign in to (?:view|see|read|access|continue)|"
      r"you'?d need to log in|only (?:members|signed-in users) can (?:read|view|see)",
      "log in to continue text", needs=1, group=LOGIN),
    S("paywall", "text", r"subscribe (?:now |today )?(?:to|for) (?:continue|read|keep reading|unlock|full access)|"
      r"for (?:paid )?(?:subscribers|members)|available to (?:paid )?(?:subscribers|members)|"
      r"exclusive to (?:paid )?(?:subscribers|members)|already a (?:subscriber|member)\??|to continue reading|"
      r"subscription required|"
      r"member-only|read the full story|upgrade (?:your plan|to \w+) to (?:unlock|read|access|continue)|"
      r"unlock (?:the full|this|full) (?:lesson|article|story|content|access)", "subscribe prompt", needs=1,
      group=PAYWALL),
    S("paywall", "title", r"(?:for|to) (?:\w+ )?(?:members|subscribers)(?: only)?|members? only|subscribers? only|"
      r"member-only|premium (?:content|article|lesson|story)|subscription required|"
      r"subscribe to (?:continue|keep reading|read)|read the full story", "members-only heading", needs=1,
      group=PAYWALL),
    S("paywall", "html", r"\"isaccessibleforfree\" *: *\"?false", "schema.org isAccessibleForFree false"),
    S("rate-limit", "title", r"\b429\b|too many requests|rate.?limit(?:ed|ing)? (?:exceeded|reached)|rate.?limited|"
      r"slow down|(?:request|api|usage) limit (?:exceeded|reached)|quota exceeded|too many (?:attempts|connections)",
      "429 / Too Many Requests heading"),
    S("rate-limit", "text", r"you(?:'ve| have| are)? (?:been |being )?rate.?limited|rate limit exceeded|"
      r"exceeded (?:a |the |your )?(?:\w+ )?rate limit|too many requests (?:from|received|were sent|have been sent)|"
      r"too many requests,? please|made too many requests|sent too many requests", "rate-limit text"),
    S("not-found", "title", r"\b404\b|not found|(?:can'?t|cannot|could ?n[o']t|unable to) (?:be )?"
      r"(?:find|found|locate)|(?:does|did) ?n(?:o|')t exist|no longer (?:exists|available|here)|"
      r"nothing (?:here|to see|was found|found)|"
      r"page (?:is )?missing|nicht gefunden|existiert nicht|introuvable|non trouvée?|n'existe pas|no encontrad[ao]|"
      r"no (?:existe|pudimos encontrar)|non trovat[ao]|não encontrad[ao]|niet gevonden|bestaat niet|nie znaleziono|"
      r"не найден|не существует|找不到|未找到|不存在|見つかりません|存在しません|찾을 수 없|bulunamadı|"
      r"hittades inte|ikke fundet|ikke funnet|ei löytynyt|nenalezen", "404 / not found heading"),
    # Said to the visitor about the page they asked for, as a sentence: "This page does not exist in the second
    # edition" (a book's pointer to its new edition) is a statement about the docs, not a 404.
    S("not-found", "text", r"the page you (?:are|were|'re) looking for (?:could not|cannot|can't|couldn't|does not|"
      r"doesn't|was not|is not|no longer|has been|might have been|may have been)|"
      r"this page (?:does not|doesn't|did not|didn't) exist(?: anymore| any more)?[.!,]|"
      r"that page (?:does not|doesn't|did not|didn't) exist(?: anymore| any more)?[.!,]|"
      r"the requested (?:page|url|document) (?:does not exist|doesn't exist|could not be found|cannot be found|"
      r"can't be found|couldn't be found|was not found)|this (?:page|url|document) (?:could not|cannot|can't|"
      r"couldn't) be found|"
      r"we (?:couldn't|could not|can't|cannot) find (?:the|that|this|what you)|nothing (?:was )?found at this location",
      "page not found text"),
    S("forbidden", "title", r"\b403\b|access denied|forbidden|permission denied|not authori[sz]ed|unauthori[sz]ed|"
      r"you don'?t have (?:permission|access)|access (?:is )?(?:restricted|blocked)|you(?:'ve| have) been blocked|"
      r"request blocked|zugriff verweigert|accès refusé|acceso denegado", "403 / Access Denied heading"),
    S("legal-block", "title", r"\b451\b|unavailable for legal reasons", "451"),
    S("server-error", "title", r"\b50[0-4]\b|\b52[0-6]\b|internal server error|bad gateway|service unavailable|"
      r"gateway time-?out|request could not be satisfied|web server is (?:down|returning an unknown error)|"
      r"something went wrong|an? (?:unexpected )?error (?:has )?occurred|application error|"
      r"(?:temporarily|currently) unavailable|(?:under|down for) maintenance|we'?ll be (?:right )?back",
      "5xx / CDN error page heading"),
)

#: Labels a status alone proves, when no vendor signature names a more specific one.
STATUS_LABELS: dict[int, str] = {401: "login-wall", 402: "paywall", 403: "forbidden", 404: "not-found",
                                 410: "not-found", 429: "rate-limit", 451: "legal-block"}
#: Statuses whose label a vendor signature replaces (challenges come as 403, 429 (Kasada, Vercel) or 503).
VENDOR_STATUSES = frozenset({403, 429, 503})
