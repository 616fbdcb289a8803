"""Safety policy filter: nothing secret is ever stored (docs/architecture.md#write-path, seed 004 §2 and §9).

Provider formats come from `detect-secrets` (AWS, GitHub, Slack, Stripe, OpenAI, JWT, private
keys, basic-auth URLs, Twilio, ...). Its plugins are instantiated once and their
`analyze_string` is called directly: `scan_line` clears the filter cache and consults the global
settings on every call, which costs far more than the regexes themselves. The high-entropy
plugins are left out on purpose: on prose they flag ordinary words. A few targeted regexes cover
what detect-secrets has no plugin for: Anthropic and modern OpenAI keys, passwords and PINs
stated in chat, one-time codes, and card numbers (validated with the Luhn check).

No input costs more than linear time (a dead letter scans up to 256 KiB with the event loop
blocked). Three detect-secrets patterns and the keyword patterns are quadratic as written on
adversarial text ("secret `a`a`a…", "sk-sk-sk-…", "api_keyapi_key…"): each is used here in an
equivalent form that is tried once where the original retried at every position of the same
run (`_first_in_run`, `_mask_hopeless_backticks`). On top of that, a text longer than
`SCAN_WINDOW` is scanned in overlapping windows (`scan_windows`), so no detector is ever handed
more than `SCAN_WINDOW` characters: a text up to that size (every valid turn) is scanned whole,
exactly as before.
"""
from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache

from detect_secrets.plugins import keyword as ds_keyword
from detect_secrets.plugins.artifactory import ArtifactoryDetector
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.base import BasePlugin
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.cloudant import CloudantDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.ibm_cloud_iam import IbmCloudIamDetector
from detect_secrets.plugins.ibm_cos_hmac import IbmCosHmacDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.softlayer import SoftlayerDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

from streams.language.memo import text_memo

REDACTED = "[REDACTED]"


class PolicyViolation(str, Enum):
    """Why a text may not be stored."""

    secret = "secret"  # API key, token, credential in a URL or assignment
    private_key = "private_key"
    password = "password"  # a password, passcode or PIN stated in chat
    one_time_code = "one_time_code"
    card_number = "card_number"


_PROVIDER_PLUGINS: tuple[type[BasePlugin], ...] = (
    ArtifactoryDetector, AWSKeyDetector, AzureStorageKeyDetector, BasicAuthDetector,
    CloudantDetector, DiscordBotTokenDetector, GitHubTokenDetector, GitLabTokenDetector,
    IbmCloudIamDetector, IbmCosHmacDetector, JwtTokenDetector, MailchimpDetector, NpmDetector,
    OpenAIDetector, PypiTokenDetector, SendGridDetector, SlackDetector, SoftlayerDetector,
    SquareOAuthDetector, StripeDetector, TelegramBotTokenDetector, TwilioKeyDetector,
)

SCAN_WINDOW = 8192
"""The most characters one detector is handed at a time; above the default `MAX_TURN_CHARS`
(8000), so a turn is scanned whole and only longer texts (dead letters) in windows."""
SCAN_OVERLAP = 1024
"""Consecutive windows share at least this many characters: a secret (with its keyword) up to
this long is always seen whole by one window."""


def _first_in_run(pattern: re.Pattern[str], run: str, start: str) -> re.Pattern[str]:
    """`pattern`, tried only where `start` first occurs in each run of `run` characters.

    For a pattern that starts with `start` and then scans the rest of the run (`sk-[…]*…`,
    `eyJ[…]+\\.…`, `password\\w*…`), a try at a later occurrence in the same run reaches the
    same place as the try at the first one, so it fails when that one failed; and a match never
    stops inside a run where another could begin. Trying the first occurrence only (atomic, no
    backtracking into the skip) finds the same matches with the same groups, in one pass over
    each run instead of one per occurrence. A pattern without groups gets one around it, so
    `findall` still returns its match.
    """
    body = pattern.pattern if pattern.groups else f"({pattern.pattern})"
    return re.compile(f"(?<!{run})(?>{run}*?(?={start})){body}", pattern.flags)


# detect-secrets' keyword patterns for config-style text (`password: x`, `api_key = "x"`), in an
# equivalent linear form. Rewritten in the pattern text (each rewrite must apply exactly once):
# - the secret drops its no-op lookahead `(?=[^\v'"]*)` (it always succeeds, after scanning the
#   rest of the text at every try) and `(?=\w+)` becomes `(?=\w)` (the same test, one character);
# - a pattern that opens on the keyword and `\w*` is tried once per word (`_first_in_run`), with
#   `\w*+`: what follows it is never a word character, so giving characters back cannot help.
_KEYWORDS = "|".join(ds_keyword.DENYLIST)
_SECRET = r"(?=\w)[^\v\'\"]*[^\v,\'\"`]"
_BACKREF = re.compile(r"\(\\\d\)")


def _rewrite(text: str, old: str, new: str) -> str:
    """`text` with its one occurrence of `old` replaced (loud when detect-secrets changed)."""
    if text.count(old) != 1:
        raise ValueError(f"detect-secrets pattern changed: {old!r} not found once in {text!r}")
    return text.replace(old, new)


@dataclass(frozen=True)
class _KeywordRule:
    """One keyword pattern, the group holding the value, and how a closing backtick that this
    pattern can accept looks (None when anything may follow the closing quote)."""

    pattern: re.Pattern[str]
    group: int
    closing: re.Pattern[str] | None


def _keyword_rule(source: re.Pattern[str], group: int) -> _KeywordRule:
    """The linear form of one detect-secrets keyword pattern (see above)."""
    text = _rewrite(source.pattern, ds_keyword.SECRET, _SECRET)
    pattern = re.compile(text, source.flags)
    if text.startswith(ds_keyword.DENYLIST_REGEX):
        body = re.compile(_rewrite(text, ds_keyword.DENYLIST_REGEX, f"({_KEYWORDS})\\w*+"),
                          source.flags)
        pattern = _first_in_run(body, r"\w", f"(?:{_KEYWORDS})")
    backref = _BACKREF.search(text)
    if backref is None:
        raise ValueError(f"detect-secrets pattern changed: no closing quote (\\1) in {text!r}")
    after_closing = text[backref.end():]
    closing = (re.compile(f"(?<=[^\\v,'\"`])`(?={after_closing})", source.flags)
               if after_closing else None)
    return _KeywordRule(pattern, group, closing)


_KEYWORD_RULES: tuple[_KeywordRule, ...] = tuple(
    _keyword_rule(source, group)
    for source, group in ds_keyword.CONFIG_DENYLIST_REGEX_TO_GROUP.items()
)
_STOP = re.compile(r"[\v'\"]")  # what a keyword value never contains

# Formats detect-secrets has no plugin for.
_EXTRA_KEYS = re.compile(
    r"\bsk-ant-[A-Za-z0-9_-]{20,}"  # Anthropic
    r"|\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}"  # OpenAI project / service keys
    r"|\bsk-[A-Za-z0-9]{32,}\b"  # OpenAI user keys (legacy form without the T3BlbkFJ marker)
    r"|\bgithub_pat_[A-Za-z0-9_]{22,}"  # GitHub fine-grained tokens
    r"|\b[rs]k_test_[A-Za-z0-9]{16,}"  # Stripe test keys
    r"|\bAIza[0-9A-Za-z_-]{35}"  # Google API keys
)
_PEM_BLOCK = re.compile(  # header parts bounded: unbounded, a long header run costs its square
    r"-----BEGIN[A-Z0-9 ]{0,64}PRIVATE KEY[A-Z ]{0,64}-----.*?(?:-----END[A-Z0-9 ]*-----|$)", re.S
)
_PASSWORD = re.compile(
    r"\b(?P<kw>pass(?:word|wd|code|phrase)|pwd|pw|pin(?:\s+(?:code|number))?)"
    r"(?:\s+for\s+(?:the\s+|my\s+)?[\w.-]+)?"
    r"\s*(?:is|was|=|:|->)\s*(?:now\s+|still\s+|just\s+)?"
    r"(?P<q>[\"'`]?)(?P<val>[^\s\"'`]{3,64})(?P=q)",
    re.I,
)
_OTP_STRONG = re.compile(
    r"\b(?:otp|one[- ]time\s+(?:code|pass(?:word|code)?|pin)|2fa|mfa|totp|"
    r"(?:verification|verify|security|login|log-in|sign[- ]?in|auth(?:entication)?|"
    r"confirmation|access|sms|reset|recovery|backup)\s+code)s?\b"
    r"[^\d\n]{0,24}?(?P<val>\b\d(?:[ -]?\d){3,9}\b)",
    re.I,
)
_OTP_BARE = re.compile(
    r"\b(?P<prev>\w+\s+)?codes?\s*(?:is|was|:|=)\s*(?P<val>\d(?:[ -]?\d){3,7})\b", re.I
)
_NOT_OTP_PREFIX = frozenset(
    {"zip", "postal", "post", "area", "country", "dress", "source", "promo", "discount",
     "coupon", "tax", "error", "status", "exit", "product", "course", "class", "room", "gate"}
)
_CARD = re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])")
_PASSWORD_NOT_VALUES = frozenset(
    {"too", "very", "so", "not", "the", "a", "an", "still", "same", "different", "wrong",
     "correct", "incorrect", "weak", "strong", "long", "short", "expired", "changed", "reset",
     "required", "easy", "hard", "secure", "insecure", "saved", "stored", "written", "on",
     "in", "at", "my", "your", "our", "their", "his", "her", "something", "what", "that",
     "this", "it", "now", "always", "never", "being", "getting", "case", "and", "or", "but",
     "also", "just", "really", "only", "managed", "protected", "needed", "needs", "set",
     "sensitive", "complicated", "simple", "forgotten", "lost", "there", "here", "fine",
     "ok", "okay", "blocked", "locked", "working", "broken", "invalid", "valid", "for",
     "of", "to", "with", "from", "like", "based", "stuck", "dropped", "cut", "placed"}
)
_GENERIC_KEYWORDS = frozenset({"secret", "secrets"})
# Cheap pre-checks: the expensive patterns only run when they could match at all.
# Substring checks run in C; every keyword of detect-secrets' denylist contains one of these.
_KEYWORD_ROOTS = ("key", "pass", "pwd", "secret", "contras")
_PASSWORD_ROOTS = ("pass", "pw", "pin")
_OTP_ROOTS = ("code", "otp", "2fa", "mfa", "one-time", "one time", "pass")
_PROVIDER_MARKERS = ("://", "xox", "AKC", "AP")  # plugins whose matches can be short
_DIGIT = re.compile(r"\d")


# Plugins whose patterns rescan a run from every place in it where they could start ("sk-sk-…",
# "eyJeyJ…", a line of "////…"): (the run's characters, where a match starts).
_FIRST_IN_RUN: dict[type[BasePlugin], tuple[str, str]] = {
    OpenAIDetector: (r"[A-Za-z0-9_-]", "sk-"),
    JwtTokenDetector: (r"[A-Za-z0-9_=-]", "eyJ"),
    NpmDetector: (r"[^\n]", "//"),
}


@lru_cache(maxsize=1)
def _plugins() -> tuple[BasePlugin, ...]:
    """The detect-secrets provider plugins, built once per process; those in `_FIRST_IN_RUN`
    with their patterns in the equivalent linear form (`_first_in_run`)."""
    plugins = tuple(cls() for cls in _PROVIDER_PLUGINS)
    for plugin in plugins:
        if (run := _FIRST_IN_RUN.get(type(plugin))) is not None:
            plugin.denylist = [_first_in_run(p, *run) for p in type(plugin).denylist]
    return plugins


def _luhn_ok(digits: str) -> bool:
    """Luhn checksum over a string of digits."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _looks_like_token(value: str) -> bool:
    """A value shaped like a credential rather than an English word."""
    has_digit = any(c.isdigit() for c in value)
    has_symbol = any(not c.isalnum() for c in value)
    mixed_case = value[1:] != value[1:].lower()
    return len(value) >= 6 and (has_digit or has_symbol or mixed_case)


Hit = tuple[PolicyViolation, int, int]
"""(reason, start, end) of one detected span."""


_TOKEN_TAIL = re.compile(r"[\w+/=-]*")  # letters, digits and "_-+/=": what a key is made of


def _token_extender(text: str, tail: re.Pattern[str] = _TOKEN_TAIL) -> Callable[[int], int]:
    """`end` → the end of the token it lies in, a run of `tail` (JWT signatures, key suffixes;
    `tail` matches the empty string: an `end` outside any token stays where it is).

    Remembers the last token read: hits come in order, so however many of them fall inside one
    long token, it is read once.
    """
    last = (0, -1)  # (from, token end): every position in between extends to the same end

    def extend(end: int) -> int:
        nonlocal last
        if not last[0] <= end <= last[1]:
            token = tail.match(text, end)
            assert token is not None, "a tail pattern matches the empty string, so at any end"
            last = (end, token.end())
        return last[1]

    return extend


def _plugin_hits(plugin: BasePlugin, text: str, extend: Callable[[int], int]) -> Iterator[Hit]:
    """Spans of one detect-secrets plugin (its own validation, e.g. JWT, applies)."""
    values = {v for v in plugin.analyze_string(text) if v}
    if not values:
        return
    for pattern in getattr(plugin, "denylist", ()):
        for m in pattern.finditer(text):
            groups = [i for i in range(m.re.groups + 1) if m.group(i) in values]
            if groups:  # the captured secret, unless the group is only a prefix ("ghp")
                i = groups[-1] if m.start(groups[-1]) > m.start() else 0
                yield PolicyViolation.secret, m.start(i), extend(m.end(i))


def _provider_hits(text: str) -> Iterator[Hit]:
    """Provider key formats: detect-secrets plugins plus the extra key formats."""
    for plugin in _plugins():
        yield from _plugin_hits(plugin, text, _token_extender(text))
    for m in _EXTRA_KEYS.finditer(text):
        yield PolicyViolation.secret, m.start(), m.end()


def _mask_hopeless_backticks(text: str, closing: re.Pattern[str]) -> str:
    """`text` with "," for each backtick that cannot open a value of a pattern whose closing
    backticks look like `closing`.

    A backtick opens a value only when a closing backtick follows in the same stretch without
    quotes (a value holds no `'`, `"` or `\\v`); one after the last closing of its stretch never
    does, yet as written the pattern would scan to the end of the stretch from each of them.
    Every other part of the keyword patterns reads "," as it reads "`" (a value character that
    cannot end a value, not a word or space character), and the text is only read back through
    match positions, so the matches stay the same.
    """
    if "`" not in text:
        return text
    masked = text.replace("`", ",")
    ends = [m.start() for m in closing.finditer(text)]
    if not ends:
        return masked
    size, backwards = len(text), text[::-1]
    out: list[str] = []
    done = i = 0
    while i < len(ends):
        after = _STOP.search(text, ends[i])
        i = bisect_left(ends, after.start() if after else size, i)  # this stretch's closings
        before = _STOP.search(backwards, size - ends[i - 1])
        start = size - before.start() if before else 0
        out += [masked[done:start], text[start:ends[i - 1] + 1]]
        done = ends[i - 1] + 1
    out.append(masked[done:])
    return "".join(out)


def _keyword_hits(text: str) -> Iterator[Hit]:
    """Config-style assignments (`password: x`, `api_key = "x"`), prose excluded."""
    for rule in _KEYWORD_RULES:
        scanned = _mask_hopeless_backticks(text, rule.closing) if rule.closing else text
        for m in rule.pattern.finditer(scanned):
            value = text[m.start(rule.group):m.end(rule.group)]
            token = value.split()[0].rstrip(".,;") if value.strip() else ""
            keyword = text[m.start(1):m.end(1)].lower()
            if len(token) < 3 or token.lower() in _PASSWORD_NOT_VALUES or REDACTED in token:
                continue
            if keyword in _GENERIC_KEYWORDS and not _looks_like_token(token):
                continue  # "my secret: I hate mornings" is prose
            start = m.start(rule.group) + (len(value) - len(value.lstrip()))
            yield PolicyViolation.secret, start, start + len(token)


def _password_hits(text: str) -> Iterator[Hit]:
    """Passwords, passcodes and PINs stated in chat ("my PIN is 4821")."""
    for m in _PASSWORD.finditer(text):
        value = m.group("val").rstrip(".,;)")
        if value.lower() in _PASSWORD_NOT_VALUES or len(value) < 3 or REDACTED in value:
            continue
        if m.group("kw").lower().startswith("pin") and not value.isdigit():
            continue  # "the pin is in the drawer"
        yield PolicyViolation.password, m.start("val"), m.start("val") + len(value)


def _otp_hits(text: str) -> Iterator[Hit]:
    """One-time and verification codes."""
    for m in _OTP_STRONG.finditer(text):
        yield PolicyViolation.one_time_code, m.start("val"), m.end("val")
    for m in _OTP_BARE.finditer(text):
        prev = (m.group("prev") or "").strip().lower()
        if prev not in _NOT_OTP_PREFIX:
            yield PolicyViolation.one_time_code, m.start("val"), m.end("val")


def _card_hits(text: str) -> Iterator[Hit]:
    """Card numbers (13-19 digits, Luhn-valid)."""
    for m in _CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group(0))
        if 13 <= len(digits) <= 19 and digits[0] in "23456" and _luhn_ok(digits):
            yield PolicyViolation.card_number, m.start(), m.end()


def _private_key_hits(text: str) -> Iterator[Hit]:
    """PEM / PuTTY private key blocks."""
    for m in _PEM_BLOCK.finditer(text):
        yield PolicyViolation.private_key, m.start(), m.end()
    for m in re.finditer(r"PuTTY-User-Key-File-\d.*", text, re.S):
        yield PolicyViolation.private_key, m.start(), m.end()


def _has_any(low: str, roots: tuple[str, ...]) -> bool:
    """Whether any of `roots` occurs in `low`."""
    return any(root in low for root in roots)


_LAST_SPACE = re.compile(r".*\s", re.S)
_TOKEN_REST = re.compile(r"\S*")


def _after_last_space(text: str, lo: int, hi: int) -> int:
    """The position just after the last whitespace in `text[lo:hi]`, else `hi`."""
    m = _LAST_SPACE.match(text, lo, hi)
    return m.end() if m else hi


def scan_windows(text: str) -> list[tuple[int, int]]:
    """The (start, end) windows `text` is scanned in: the whole text when it fits `SCAN_WINDOW`,
    else windows of at most `SCAN_WINDOW` characters overlapping by at least `SCAN_OVERLAP`, cut
    after whitespace where there is some close by (so that a token is rarely split)."""
    size, half = len(text), SCAN_OVERLAP // 2
    windows: list[tuple[int, int]] = []
    start = 0
    while True:
        end = min(size, start + SCAN_WINDOW)
        if end < size:
            end = _after_last_space(text, end - half, end)
        windows.append((start, end))
        if end == size:
            return windows
        start = _after_last_space(text, end - SCAN_OVERLAP - half, end - SCAN_OVERLAP)


def _window_hits(text: str) -> Iterator[Hit]:
    """Every span the detectors other than private keys find in one window, in a fixed order."""
    low = text.lower()
    if max(map(len, text.split()), default=0) >= 16 or _has_any(text, _PROVIDER_MARKERS):
        yield from _provider_hits(text)
    if _has_any(low, _KEYWORD_ROOTS):
        yield from _keyword_hits(text)
    if _has_any(low, _PASSWORD_ROOTS):
        yield from _password_hits(text)
    digits = len(_DIGIT.findall(text))
    if digits >= 4 and _has_any(low, _OTP_ROOTS):
        yield from _otp_hits(text)
    if digits >= 13:
        yield from _card_hits(text)


def _hits(text: str) -> Iterator[Hit]:
    """Every detected span in `text`.

    Private keys are found in the whole text (their patterns read it once: a bounded header,
    then up to the first end marker); everything else window by window (`scan_windows`). A
    span that runs into the end of a window cut inside a token goes on to the token's end.
    """
    if "PRIVATE KEY" in text or "PuTTY" in text:
        yield from _private_key_hits(text)
    size, extend = len(text), _token_extender(text, _TOKEN_REST)
    for start, end in scan_windows(text):
        cut_in_token = 0 < end < size and not (text[end - 1].isspace() or text[end].isspace())
        for reason, a, b in _window_hits(text[start:end]):
            b += start
            yield reason, a + start, extend(b) if cut_in_token and b == end else b


_DETECTION_ORDER = (PolicyViolation.private_key, PolicyViolation.secret, PolicyViolation.password,
                    PolicyViolation.one_time_code, PolicyViolation.card_number)


def find_secrets(text: str) -> list[str]:
    """Reason names (`PolicyViolation` values) of everything secret in `text`, in the order of
    the detectors (private keys, provider and keyword secrets, passwords, one-time codes, card
    numbers); empty = clean."""
    if not text:
        return []
    found = {reason for reason, _, _ in _scan(text)}
    return [reason.value for reason in _DETECTION_ORDER if reason in found]


@text_memo
def _scan(text: str) -> tuple[Hit, ...]:
    """`_hits`, memoised: the trigger, the extractor, the policy and the thread buffer's
    `redact` each scan a turn."""
    return tuple(_hits(text))


def redact(text: str) -> str:
    """`text` with every detected secret span replaced by `[REDACTED]` (for logs)."""
    if not text:
        return text
    spans = sorted((start, end) for _, start, end in _scan(text) if end > start)
    out: list[str] = []
    pos = 0
    for start, end in spans:
        if end <= pos:
            continue
        out.append(text[pos:max(pos, start)])
        out.append(REDACTED if start >= pos else "")
        pos = end
    out.append(text[pos:])
    return "".join(out)


def is_storable(text: str) -> tuple[bool, str | None]:
    """(True, None) when `text` may be stored, else (False, first reason)."""
    reasons = find_secrets(text)
    return (not reasons, reasons[0] if reasons else None)
