"""Block-page signatures as data: what marks a page as a challenge, a block or an error.

Each :class:`Signature` names the label it proves and where it looks:

``html``    the raw markup (scripts, form fields, vendor markers such as ``cf-chl``)
``title``   the page's ``<title>`` and ``<h1>``/``<h2>`` text
``text``    the page's visible text (tags stripped, entities decoded)
``header``  one response header, as ``name: value`` in lower case
``form``    the markup, on a page with under 1,000 characters of content (login forms)
``stub``    the markup, on a near-empty page (under 200 characters of content): a vendor's
            script on a page that shows nothing is its challenge (Cloudflare bot-fight mode
            injects ``__CF$cv$params`` into every page of a site, so it proves nothing on a
            page with content)

Markup, title and text signatures only count on a *thin* page (under 2,000 characters
of main content; error wording of the generic kinds under 1,000, in a short heading)
or a 4xx/5xx response: a documentation page that explains Cloudflare challenges or
lists HTTP status codes carries the same words with a lot of content around them.
``decisive`` header signatures (``cf-mitigated: challenge``) count on any page. A
``vendor`` header signature (``server: cloudflare``) only names who answered a
403/429/503: it is on every response of a protected site.

Patterns are lower case and run on lower-cased inputs (faster than ``re.IGNORECASE``).
Order matters: the first matching signature of the highest ``rank`` wins (vendor
challenges and blocks outrank the generic kinds). docs/quality.md lists the labels.
"""

from __future__ import annotations

import re
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


@dataclass(frozen=True)
class Signature:
    label: str
    where: str  # "html" | "title" | "text" | "header" | "form"
    pattern: str
    note: str
    decisive: bool = False  # header signatures: counts whatever the content
    vendor: bool = False  # header signatures: names who answered a blocking status
    #: one (required literal prefix, regex or None) per top-level alternative
    branches: tuple[tuple[str, re.Pattern[str] | None], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # One entry per top-level alternative. ``str`` substring search is several times
        # faster than the regex engine's on a 256 kB page: a branch that is a plain literal
        # is only searched as a substring, and a branch opening with a literal runs its regex
        # only on a text that holds the literal (it cannot match elsewhere).
        branches = []
        for branch in split_alternatives(self.pattern):
            prefix, whole = literal_prefix(branch)
            branches.append((prefix, None if whole else re.compile(branch)))
        object.__setattr__(self, "branches", tuple(branches))

    def search(self, text: str) -> bool:
        """Does the (lower-cased) text match?"""
        return any((prefix in text) and (regex is None or regex.search(text) is not None)
                   for prefix, regex in self.branches)

    @property
    def rank(self) -> int:
        if self.label in VENDOR_LABELS:
            return RANK_VENDOR
        return RANK_CAPTCHA if self.label == "captcha" else RANK_KIND


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
    S("cloudflare-challenge", "text", r"checking (?:if the site connection is secure|your browser before accessing)",
      "'Checking your browser' text"),
    S("cloudflare-block", "title", r"used cloudflare to restrict access", "firewall rule block title"),
    S("cloudflare-block", "title", r"attention required!? \| cloudflare", "'Attention Required! | Cloudflare'"),
    S("cloudflare-block", "text", r"sorry, you have been blocked", "'Sorry, you have been blocked'"),
    S("cloudflare-block", "html", r"cf-error-code\"?>\s*10\d\d\b", "Cloudflare error 10xx (access denied)"),
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
    S("perimeterx", "text", r"press (?:&|and) hold", "'Press & Hold' human check"),
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
    S("captcha", "text", r"verify (?:that )?you(?: are|'re) (?:a )?human|are you a robot|i'?m not a robot|"
      r"complete the (?:security check|captcha)|prove you(?:'re| are) (?:human|not a robot)", "human check text"),
    # Kinds.
    S("rate-limit", "title", r"\b429\b|too many requests|rate limit", "429 / Too Many Requests title"),
    S("rate-limit", "text", r"you(?:'ve| have| are)? (?:been |being )?rate.?limited|rate limit exceeded|"
      r"too many requests (?:from|received|were sent|have been sent)", "rate-limit text"),
    S("not-found", "title", r"\b404\b|\bnot found\b|page (?:does not|doesn't|could not be) (?:exist|found)|"
      r"no longer (?:exists|available)", "404 / not found heading"),
    S("login-wall", "form", r"<input\b[^<>]{0,500}\btype\s*=\s*[\"']?password", "password form, little else"),
    S("login-wall", "title", r"^\s*(?:log ?in|sign ?in|login required|authentication required)\b", "login title"),
    S("login-wall", "text", r"you (?:must|need to) (?:be logged in|log in|sign in)|please (?:log|sign) in to "
      r"(?:continue|view|access)", "log in to continue text"),
    S("paywall", "text", r"subscribe (?:now |today )?to (?:continue|read|keep reading|unlock)|"
      r"(?:this (?:article|content|story) is )?(?:for|available to|exclusive to) (?:paid )?subscribers(?: only)?|"
      r"already a subscriber\??|to continue reading|subscription required", "subscribe prompt"),
    S("paywall", "html", r"\"isaccessibleforfree\" *: *\"?false", "schema.org isAccessibleForFree false"),
    S("forbidden", "title", r"\b403\b|access denied|forbidden|you don't have permission", "403 / Access Denied"),
    S("legal-block", "title", r"\b451\b|unavailable for legal reasons", "451"),
    S("server-error", "title", r"\b50[0-4]\b|\b52[0-6]\b|internal server error|bad gateway|service unavailable|"
      r"gateway time-?out|request could not be satisfied|web server is (?:down|returning an unknown error)",
      "5xx / CDN error page title"),
)

#: Labels a status alone proves, when no vendor signature names a more specific one.
STATUS_LABELS: dict[int, str] = {401: "login-wall", 402: "paywall", 403: "forbidden", 404: "not-found",
                                 410: "not-found", 429: "rate-limit", 451: "legal-block"}
#: Statuses whose label a vendor signature replaces (challenges come as 403, 429 (Kasada, Vercel) or 503).
VENDOR_STATUSES = frozenset({403, 429, 503})

