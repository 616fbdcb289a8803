"""Safety policy filter: nothing secret is ever stored (SPEC §4, seed 004 §2 and §9).

Provider formats come from `detect-secrets` (AWS, GitHub, Slack, Stripe, OpenAI, JWT, private
keys, basic-auth URLs, Twilio, ...). Its plugins are instantiated once and their
`analyze_string` is called directly: `scan_line` clears the filter cache and consults the global
settings on every call, which costs far more than the regexes themselves. The high-entropy
plugins are left out on purpose: on prose they flag ordinary words. A few targeted regexes cover
what detect-secrets has no plugin for: Anthropic and modern OpenAI keys, passwords and PINs
stated in chat, one-time codes, and card numbers (validated with the Luhn check).
"""
from __future__ import annotations

import re
from collections.abc import Iterator
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

# detect-secrets' keyword patterns for config-style text (`password: x`, `api_key = "x"`).
_KEYWORD_PATTERNS: tuple[tuple[re.Pattern[str], int], ...] = tuple(
    ds_keyword.CONFIG_DENYLIST_REGEX_TO_GROUP.items()
)

# Formats detect-secrets has no plugin for.
_EXTRA_KEYS = re.compile(
    r"\bsk-ant-[A-Za-z0-9_-]{20,}"  # Anthropic
    r"|\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}"  # OpenAI project / service keys
    r"|\bsk-[A-Za-z0-9]{32,}\b"  # OpenAI user keys (legacy form without the T3BlbkFJ marker)
    r"|\bgithub_pat_[A-Za-z0-9_]{22,}"  # GitHub fine-grained tokens
    r"|\b[rs]k_test_[A-Za-z0-9]{16,}"  # Stripe test keys
    r"|\bAIza[0-9A-Za-z_-]{35}"  # Google API keys
)
_PEM_BLOCK = re.compile(
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----.*?(?:-----END[A-Z0-9 ]*-----|$)", re.S
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


@lru_cache(maxsize=1)
def _plugins() -> tuple[BasePlugin, ...]:
    """The detect-secrets provider plugins, built once per process."""
    return tuple(cls() for cls in _PROVIDER_PLUGINS)


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


def _extend_token(text: str, end: int) -> int:
    """Extend a match to the end of its token (JWT signatures, key suffixes)."""
    while end < len(text) and (text[end].isalnum() or text[end] in "_-+/="):
        end += 1
    return end


def _plugin_hits(plugin: BasePlugin, text: str) -> Iterator[Hit]:
    """Spans of one detect-secrets plugin (its own validation, e.g. JWT, applies)."""
    values = {v for v in plugin.analyze_string(text) if v}
    if not values:
        return
    for pattern in getattr(plugin, "denylist", ()):
        for m in pattern.finditer(text):
            groups = [i for i in range(m.re.groups + 1) if m.group(i) in values]
            if groups:  # the captured secret, unless the group is only a prefix ("ghp")
                i = groups[-1] if m.start(groups[-1]) > m.start() else 0
                yield PolicyViolation.secret, m.start(i), _extend_token(text, m.end(i))


def _provider_hits(text: str) -> Iterator[Hit]:
    """Provider key formats: detect-secrets plugins plus the extra key formats."""
    for plugin in _plugins():
        yield from _plugin_hits(plugin, text)
    for m in _EXTRA_KEYS.finditer(text):
        yield PolicyViolation.secret, m.start(), m.end()


def _keyword_hits(text: str) -> Iterator[Hit]:
    """Config-style assignments (`password: x`, `api_key = "x"`), prose excluded."""
    for pattern, group in _KEYWORD_PATTERNS:
        for m in pattern.finditer(text):
            value = m.group(group) or ""
            token = value.split()[0].rstrip(".,;") if value.strip() else ""
            keyword = (m.group(1) or "").lower()
            if len(token) < 3 or token.lower() in _PASSWORD_NOT_VALUES or REDACTED in token:
                continue
            if keyword in _GENERIC_KEYWORDS and not _looks_like_token(token):
                continue  # "my secret: I hate mornings" is prose
            start = m.start(group) + (len(value) - len(value.lstrip()))
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


def _hits(text: str) -> Iterator[Hit]:
    """Every detected span in `text`, detectors in a fixed order."""
    low = text.lower()
    if "PRIVATE KEY" in text or "PuTTY" in text:
        yield from _private_key_hits(text)
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


def find_secrets(text: str) -> list[str]:
    """Reason names (`PolicyViolation` values) of everything secret in `text`; empty = clean."""
    if not text:
        return []
    reasons: dict[str, None] = {}
    for reason, _, _ in _hits(text):
        reasons[reason.value] = None
    return list(reasons)


def redact(text: str) -> str:
    """`text` with every detected secret span replaced by `[REDACTED]` (for logs)."""
    if not text:
        return text
    spans = sorted((start, end) for _, start, end in _hits(text) if end > start)
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
