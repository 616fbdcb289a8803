"""Rules trigger (docs/architecture.md#write-path): is this turn worth a memory, and is it an explicit command?"""
from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from streams.language.captions import split_image_caption
from streams.language.fact_sentences import MIN_SCORE, content_parts, fact_sentences, note_sentence
from streams.language.sentences import clean_sentence
from streams.language.splitting import split_sentences
from streams.language.signals import memory_type, signal_tags
from topics.turns import Role, Turn

# --- explicit commands -----------------------------------------------------------------------

class CommandKind(str, Enum):
    """Kinds of explicit memory commands."""
    remember = "remember"
    forget = "forget"
    dont_remember = "dont_remember"
    pin = "pin"


@dataclass(frozen=True)
class ExplicitCommand:
    """An explicit memory command; `payload` is the text it applies to ("" = the context)."""

    kind: CommandKind
    payload: str


_PREFIX = (
    r"^\s*(?:(?:hey|ok|okay|so|and|also|oh|btw|please|pls|plz|just|actually|wait|hm+|um+|uh+|"
    r"sorry|oops|on second thoughts?)\b[,!.]*\s+)*"
    r"(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?)?(?:please\s+)?"
)
"""What may come before a command: fillers, politeness, and the words of a change of mind
("Actually, don't remember this.", "Wait, forget that.")."""
_COMMAND_PREFIX = f"(?>{_PREFIX})"
"""The commands take the longest prefix, atomically: no command opens on a word the prefix can
take but "please", which "please don't" reads the same either way, so a shorter prefix never
matches where the longest did not; tried, each shorter one rescanned the rest of the text ("ok
ok ok …" with no command in it cost the square of its length)."""
_DONT_REMEMBER = re.compile(
    _COMMAND_PREFIX + r"(?:(?:don'?t|do not|never|please don'?t)\s+(?:remember|store|save|keep|"
    r"record|memori[sz]e|log)\b(?P<p1>.*)|(?P<p2>.*)\boff the record\b.*)", re.I | re.S
)
_REMEMBER = re.compile(
    _COMMAND_PREFIX + r"(?:remember|memori[sz]e|keep in mind|(?:don'?t|do not|never) forget|"
    r"make a note|note down)\b\s*(?:that\b|this\b|:|-|,)?\s*(?P<payload>.*)", re.I | re.S
)
_FORGET = re.compile(
    _COMMAND_PREFIX + r"(?P<verb>forget|delete|erase|remove)\b\s*(?:about\s+)?(?:that\s+)?"
    r"(?P<payload>.*)", re.I | re.S,
)
_PIN = re.compile(_COMMAND_PREFIX + r"pin\b\s*(?:this|that|it)?\s*[:\-,]?\s*(?P<payload>.*)",
                  re.I | re.S)
_REMINISCENCE = re.compile(r"^(?:when|how|what|the time|that time|last|those|us|me)\b", re.I)
_VAGUE = frozenset({"", "it", "about it", "it all", "this", "that", "everything i said"})
_JUST_SAID = re.compile(r"(?:what|everything|all)(?: that)? i(?: just)? (?:said|told you|wrote|"
                        r"mentioned)", re.I)
_DELETE_TARGET = re.compile(r"\b(?:memor|fact|that|this|what i|everything|about|my)\w*", re.I)
_TAKE_BACK = ExplicitCommand(CommandKind.dont_remember, "")
"""What "don't remember this" and "forget that" ask: take back what the thread's last turn stored."""


_TRAILING_POLITE = re.compile(  # tried where a run of spaces and commas starts (see streams/language/sentences.py)
    r"(?<![\s,])[\s,]++(?:please|pls|plz|thanks|thank you|ok|okay)\W*$", re.I)
_LEADING_DEICTIC = re.compile(r"^(?:this|that|it)\b(?:\W|$)", re.I)


def _clean_payload(payload: str) -> str:
    """Trim punctuation and trailing politeness ("please", "thanks") off a payload."""
    payload = _TRAILING_POLITE.sub("", payload.strip())
    return payload.strip(" .!?,;:-").strip()


def parse_command(text: str) -> ExplicitCommand | None:
    """Recognise "remember that …", "forget …", "don't remember this", "pin …"."""
    body = text.strip()
    if not body:
        return None
    if m := _DONT_REMEMBER.match(body):
        payload = _clean_payload(m.group("p1") or "")
        payload = "" if _LEADING_DEICTIC.match(payload) or payload.lower() in _VAGUE else payload
        return ExplicitCommand(CommandKind.dont_remember, payload)
    if m := _REMEMBER.match(body):
        payload = _clean_payload(m.group("payload"))
        if not payload or _REMINISCENCE.match(payload):
            return None
        if body.endswith("?") and not re.match(_PREFIX + r"(?:can|could|would|will)\b", body, re.I):
            return None
        return ExplicitCommand(CommandKind.remember, payload)
    if m := _FORGET.match(body):
        payload = _clean_payload(m.group("payload"))
        head = payload.split(",")[0].lower()
        forget = m.group("verb").lower() == "forget"
        if head in {"it", "about it", "it all"} or not (forget or _DELETE_TARGET.search(payload)):
            return None  # "forget it" is a dismissal; "delete the file" is not about memory
        if payload.lower() in _VAGUE or _JUST_SAID.fullmatch(payload):
            # "Forget that." names nothing to search for: it takes back what was just said
            # ("delete that" may be about anything, a file, a message: not a memory command).
            return _TAKE_BACK if forget else None
        return ExplicitCommand(CommandKind.forget, payload)
    if m := _PIN.match(body):
        payload = _clean_payload(m.group("payload"))
        return ExplicitCommand(CommandKind.pin, "" if payload.lower() in _VAGUE else payload)
    return None


# --- the trigger ----------------------------------------------------------------------------

@dataclass(frozen=True)
class TriggerDecision:
    """Trigger output (docs/architecture.md#write-path). Emit a candidate at once when `should_create` and
    `confidence` ≥ `trigger_confidence_min`; `command` is set for explicit commands."""

    should_create: bool
    type_hint: str | None
    tags_hint: tuple[str, ...]
    confidence: float
    command: ExplicitCommand | None = None


SKIP = TriggerDecision(False, None, (), 0.0)


def _command_decision(cmd: ExplicitCommand) -> TriggerDecision:
    """Trigger decision of an explicit command (hot path, confidence 1)."""
    creates = cmd.kind in (CommandKind.remember, CommandKind.pin)
    return TriggerDecision(creates, "semantic" if creates else None,
                           ("explicit", cmd.kind.value), 1.0, cmd)


def rules_trigger(turn: Turn) -> TriggerDecision:
    """Decide, without a model, whether `turn` should produce a memory candidate.

    Uses the extractor's own sentence choice (`fact_sentences`), so confidence ≥ 0.6 means the
    rules extractor finds at least one fact; a shared photo (LoCoMo caption) alone is one fact
    at 0.6; assistant decisions stay at 0.5.
    """
    text, caption = split_image_caption(turn.text)
    if turn.role in (Role.tool, Role.system):
        return TriggerDecision(False, None, (), 0.05)
    if turn.role == Role.user and (cmd := parse_command(text)):
        return _command_decision(cmd)
    sentences = [clean_sentence(s, image=bool(caption)) for s in split_sentences(text)]
    names = (turn.speaker_name,)
    picked = fact_sentences(sentences, turn.role, names)
    if not picked:
        if turn.role == Role.user and caption:
            return TriggerDecision(True, "semantic", ("image",), 0.6)  # a shared photo is a fact
        if turn.role == Role.assistant:
            return TriggerDecision(False, None, (), 0.1)
        if note_sentence(text, names, image=bool(caption)):
            return TriggerDecision(True, "semantic", ("note",), 0.6)  # kept as what was said
        near = [p for p in content_parts(sentences, turn.role, names) if p is not None]
        if not near:
            return SKIP
        top = max(near, key=lambda p: (p.head_score, -p.index))
        confidence = round(max(0.0, min(0.55, 0.6 - 0.2 * (MIN_SCORE - top.head_score))), 3)
        should = confidence >= 0.45
        return TriggerDecision(should, memory_type(top.text, top.sig) if should else None,
                               tuple(signal_tags(top.sig)) if should else (), confidence)
    best = max(picked, key=lambda p: (p.head_score, -p.index))
    if turn.role == Role.assistant:
        return TriggerDecision(True, memory_type(best.text, best.sig), ("decision",), 0.5)
    confidence = round(min(0.95, 0.6 + 0.15 * (best.head_score - MIN_SCORE)), 3)  # MIN_SCORE: 0.6
    return TriggerDecision(True, memory_type(best.text, best.sig), tuple(signal_tags(best.sig)),
                           confidence)
