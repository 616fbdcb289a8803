"""Rules trigger (SPEC §4): is this turn worth a memory, and is it an explicit command?

Also holds the small text helpers the rules extractor shares (sentence splitting, filler,
greeting and question detection, per-sentence content signals).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from topics.turns import Role, Turn

# --- text helpers ------------------------------------------------------------------------

_CAPTION = re.compile(r"\s*\[shares an image:\s*(?P<caption>[^\]]*)\]\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])|\s*\n+\s*|(?<=[.!?])\s+-\s+")
_WORD = re.compile(r"[A-Za-z][A-Za-z'’]*|\d+")
_NORMALISE = re.compile(r"[^a-z0-9' ]+")

GREETING_WORDS = frozenset(
    {"hi", "hello", "hey", "heya", "hiya", "yo", "howdy", "greetings", "morning", "evening",
     "afternoon", "good", "bye", "goodbye", "cya", "night", "goodnight", "there", "all",
     "everyone", "guys", "folks", "welcome", "back", "again"}
)
FILLER_WORDS = frozenset(
    {"ok", "okay", "k", "kk", "thanks", "thank", "thx", "ty", "you", "so", "much", "haha",
     "hahaha", "ha", "lol", "lmao", "rofl", "cool", "nice", "great", "awesome", "sure",
     "yes", "yeah", "yep", "yup", "no", "nope", "nah", "wow", "oh", "ah", "aw", "aww", "hmm",
     "hm", "right", "alright", "true", "indeed", "exactly", "totally", "agreed", "sounds",
     "good", "perfect", "amazing", "sweet", "np", "of", "course", "definitely", "absolutely",
     "omg", "wowza", "neat", "fine", "gotcha", "got", "it", "see", "bye", "later", "care",
     "take", "ttyl", "cheers", "welcome", "a", "lot", "really", "very", "too", "me", "that's",
     "thats", "is", "so", "and", "love", "to", "hear", "great", "glad", "happy", "for",
     "congrats", "congratulations", "well", "done", "yay", "woohoo", "same", "here", "mine",
     "agree", "know", "i", "the", "wonderful", "fantastic", "incredible", "beautiful", "just"}
)
_PLEASANTRY = re.compile(
    r"^(?:(?:it'?s\s+)?(?:so\s+|really\s+)?(?:good|great|nice|lovely)\s+to\s+(?:see|hear from|meet|"
    r"talk to|chat with)\s+you|how\s+(?:are|have)\s+you|what'?s\s+up|talk\s+(?:to you\s+)?soon|"
    r"see\s+you|take\s+care|have\s+a\s+(?:good|great|nice)|long\s+time\s+no\s+see)\b",
    re.I,
)
_QUESTION_START = re.compile(
    r"^(?:what|what's|whats|who|whom|whose|which|when|where|why|how|do|does|did|can|could|"
    r"would|will|should|shall|is|are|was|were|have|has|had|may|might|am|any|anything)\b",
    re.I,
)
_FIRST_PERSON = re.compile(r"\b(?:I|i|I'm|I've|I'll|I'd|me|my|mine|myself|we|we're|we've|our|us)\b")
_SECOND_PERSON = re.compile(r"\b(?:you|your|yours|yourself|you're|you've|you'll|you'd|u|ur)\b", re.I)
_PREFERENCE = re.compile(
    r"\b(?:love|loved|like|liked|enjoy|enjoyed|hate|hated|prefer|preferred|adore|dislike|"
    r"favou?rite|fan of|into|passionate|obsessed|can't stand|keen on)\b",
    re.I,
)
_PLAN = re.compile(
    r"\b(?:going to|gonna|planning|plan to|plans to|intend|will|'ll|hoping to|hope to|want to|"
    r"wanna|aim to|goal|looking forward|thinking of|thinking about|about to|next (?:week|month|"
    r"year|summer)|decided to|signing up|saving (?:up )?for)\b",
    re.I,
)
_LIFE_EVENT = re.compile(
    r"\b(?:adopted|married|engaged|divorced|graduated|moved|started|began|joined|quit|retired|"
    r"born|passed away|died|hired|promoted|fired|bought|sold|won|lost|finished|completed|"
    r"launched|opened|visited|travell?ed|attended|went|got|became|raised|published|signed up|"
    r"ran|climbed|hiked|painted|wrote|built|made|took|received|celebrated|met|had)\b",
    re.I,
)
_IDENTITY = re.compile(
    r"\b(?:my name is|call me|I'?m from|I am from|I live|I'm living|I work|I'm a|I am a|"
    r"I'm an|I am an|my (?:job|work|career|profession|username|handle|pronouns))\b",
    re.I,
)
_TIME_ANCHOR = re.compile(
    r"\b(?:yesterday|today|tonight|last (?:night|week|weekend|month|year|summer|winter|spring|"
    r"fall|autumn|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|this (?:morning|"
    r"afternoon|evening|week|weekend|month|year)|ago|the other day|recently|earlier|"
    r"(?:in|since) (?:19|20)\d\d|on (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"over the weekend)\b",
    re.I,
)
_NUMBER = re.compile(r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|twenty|hundred)\b", re.I)
_ENTITY = re.compile(r"(?<=[\w,;:] )(?:[A-Z][\w'’&-]*)(?: (?:of |the |de )?[A-Z][\w'’&-]*)*")
_STEPS = re.compile(
    r"(?:\bstep \d|\bfirst(?:ly)?,? .+\bthen\b|(?:^|\n)\s*\d+[.)]\s|\bto \w+ .{0,40}\byou (?:need|"
    r"have|should)\b)",
    re.I,
)
_PAST_VERB = re.compile(
    r"\b(?:went|visited|attended|saw|met|took|ran|finished|started|adopted|bought|got|had|did|"
    r"joined|travell?ed|celebrated|watched|played|won|lost|hiked|painted|made|tried|gave|"
    r"received|graduated|moved|began|came|left|spent|wrote|read|ate|flew|drove|climbed|"
    r"signed|volunteered|organi[sz]ed|hosted|\w+ed)\b",
    re.I,
)
_DECISION = re.compile(
    r"\b(?:we(?:'ve| have)? decided|(?:I|we)(?:'ll| will) (?:go with|use|book|schedule|set up|"
    r"remind)|let's go with|the plan is|(?:I've|I have) (?:booked|scheduled|set|created|added|"
    r"saved)|decided to|agreed to|we agreed|going with)\b",
    re.I,
)


def strip_caption(text: str) -> tuple[str, str | None]:
    """Split a LoCoMo-style `[shares an image: …]` suffix off the text."""
    m = _CAPTION.search(text)
    if not m:
        return text, None
    return text[: m.start()].rstrip(), m.group("caption").strip() or None


def split_sentences(text: str) -> list[str]:
    """Split chat text into sentences (punctuation- and newline-based, no model)."""
    parts = _SENTENCE_END.split(text.strip())
    return [p.strip() for p in parts if p and p.strip()]


def words(text: str) -> list[str]:
    """Word tokens (letters with apostrophes, or digit runs)."""
    return _WORD.findall(text)


def _normalised(text: str) -> list[str]:
    return _NORMALISE.sub(" ", text.lower().replace("’", "'")).split()


def is_greeting(sentence: str, names: tuple[str, ...] = ()) -> bool:
    """"Hi!", "Hey Mel!", "Good morning everyone", "Good to see you!"."""
    if _PLEASANTRY.match(sentence.strip()):
        return True
    toks = _normalised(sentence)
    lowered = {n.lower() for n in names}
    if not toks or toks[0] not in GREETING_WORDS:
        return False
    rest = [t for t in toks if t not in GREETING_WORDS and t not in lowered]
    return len(rest) <= 1 and all(t[:1].isalpha() for t in rest)


def is_filler(sentence: str) -> bool:
    """"ok", "thanks!", "haha", "lol", "That's so cool!": nothing worth storing."""
    toks = _normalised(sentence)
    return not toks or all(t in FILLER_WORDS for t in toks)


def is_question(sentence: str) -> bool:
    """A question: ends with `?`, or opens like one and has no statement punctuation."""
    s = sentence.strip()
    if s.endswith("?"):
        return True
    return bool(_QUESTION_START.match(s)) and not s.endswith((".", "!")) and len(words(s)) < 12


@dataclass(frozen=True)
class Signals:
    """Cheap content signals of one sentence."""

    first_person: bool
    second_person: bool
    preference: bool
    plan: bool
    life_event: bool
    identity: bool
    time_anchor: bool
    number: bool
    decision: bool
    entities: tuple[str, ...]
    n_words: int


def sentence_signals(sentence: str) -> Signals:
    """Compute the content signals of one sentence."""
    return Signals(
        first_person=bool(_FIRST_PERSON.search(sentence)),
        second_person=bool(_SECOND_PERSON.search(sentence)),
        preference=bool(_PREFERENCE.search(sentence)),
        plan=bool(_PLAN.search(sentence)),
        life_event=bool(_LIFE_EVENT.search(sentence)),
        identity=bool(_IDENTITY.search(sentence)),
        time_anchor=bool(_TIME_ANCHOR.search(sentence)),
        number=bool(_NUMBER.search(sentence)),
        decision=bool(_DECISION.search(sentence)),
        entities=tuple(e for e in _ENTITY.findall(sentence) if e not in {"I", "I'm", "I've"}),
        n_words=len(words(sentence)),
    )


def memory_type(sentence: str, signals: Signals | None = None) -> str:
    """semantic | episodic (past event with a time anchor) | procedural (step-by-step)."""
    sig = signals or sentence_signals(sentence)
    if _STEPS.search(sentence):
        return "procedural"
    if sig.time_anchor and _PAST_VERB.search(sentence) and not sig.plan:
        return "episodic"
    return "semantic"


def content_sentences(text: str, names: tuple[str, ...] = ()) -> list[str]:
    """Sentences of `text` that are neither greetings, filler nor questions."""
    return [
        s for s in split_sentences(text)
        if not (is_greeting(s, names) or is_filler(s) or is_question(s))
    ]


# --- explicit commands -----------------------------------------------------------------------

class CommandKind(str, Enum):
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
    r"^\s*(?:(?:hey|ok|okay|so|and|also|oh|btw|please|pls|plz|just)\b[,!]?\s+)*"
    r"(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?)?(?:please\s+)?"
)
_DONT_REMEMBER = re.compile(
    _PREFIX + r"(?:(?:don'?t|do not|never|please don'?t)\s+(?:remember|store|save|keep|record|"
    r"memori[sz]e|log)\b(?P<p1>.*)|(?P<p2>.*)\boff the record\b.*)",
    re.I | re.S,
)
_REMEMBER = re.compile(
    _PREFIX + r"(?:remember|memori[sz]e|keep in mind|(?:don'?t|do not|never) forget|"
    r"make a note|note down)\b\s*(?:that\b|this\b|:|-|,)?\s*(?P<payload>.*)",
    re.I | re.S,
)
_FORGET = re.compile(
    _PREFIX + r"(?:forget|delete|erase|remove)\b\s*(?:about\s+)?(?:that\s+)?(?P<payload>.*)",
    re.I | re.S,
)
_PIN = re.compile(_PREFIX + r"pin\b\s*(?:this|that|it)?\s*[:\-,]?\s*(?P<payload>.*)", re.I | re.S)
_REMINISCENCE = re.compile(r"^(?:when|how|what|the time|that time|last|those|us|me)\b", re.I)
_VAGUE = frozenset({"", "it", "about it", "it all", "this", "that", "everything i said"})
_DELETE_TARGET = re.compile(r"\b(?:memor|fact|that|this|what i|everything|about|my)\w*", re.I)


_TRAILING_POLITE = re.compile(r"[\s,]+(?:please|pls|plz|thanks|thank you|ok|okay)\W*$", re.I)
_LEADING_DEICTIC = re.compile(r"^(?:this|that|it)\b(?:\W|$)", re.I)


def _clean_payload(payload: str) -> str:
    payload = _TRAILING_POLITE.sub("", payload.strip())
    return payload.strip(" .!,;:-").strip()


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
        if head in {"it", "about it", "it all"} or (body.lower().startswith(("delete", "erase",
                "remove")) and not _DELETE_TARGET.search(payload)):
            return None  # "forget it" is a dismissal; "delete the file" is not about memory
        return ExplicitCommand(CommandKind.forget, "" if payload.lower() in _VAGUE else payload)
    if m := _PIN.match(body):
        payload = _clean_payload(m.group("payload"))
        return ExplicitCommand(CommandKind.pin, "" if payload.lower() in _VAGUE else payload)
    return None


# --- the trigger ----------------------------------------------------------------------------

@dataclass(frozen=True)
class TriggerDecision:
    """Trigger output (SPEC §4). Emit a candidate at once when `should_create` and
    `confidence` ≥ `trigger_confidence_min`; `command` is set for explicit commands."""

    should_create: bool
    type_hint: str | None
    tags_hint: tuple[str, ...]
    confidence: float
    command: ExplicitCommand | None = None


SKIP = TriggerDecision(False, None, (), 0.0)


def _sentence_score(sig: Signals) -> float:
    score = 0.25 * sig.first_person + 0.2 * sig.preference + 0.15 * sig.plan
    score += 0.2 * sig.life_event + 0.25 * sig.identity + 0.1 * sig.time_anchor
    score += 0.05 * sig.number + 0.05 * min(len(sig.entities), 2)
    return score - 0.25 * (sig.second_person and not sig.first_person)


def _tags(sig: Signals) -> tuple[str, ...]:
    tags = [name for name, on in (("preference", sig.preference), ("plan", sig.plan),
            ("life_event", sig.life_event), ("identity", sig.identity)) if on]
    return tuple(tags)


def _command_decision(cmd: ExplicitCommand) -> TriggerDecision:
    creates = cmd.kind in (CommandKind.remember, CommandKind.pin)
    return TriggerDecision(creates, "semantic" if creates else None,
                           ("explicit", cmd.kind.value), 1.0, cmd)


def rules_trigger(turn: Turn) -> TriggerDecision:
    """Decide, without a model, whether `turn` should produce a memory candidate."""
    text, _ = strip_caption(turn.text)
    if turn.role in (Role.tool, Role.system):
        return TriggerDecision(False, None, (), 0.05)
    if turn.role == Role.user and (cmd := parse_command(text)):
        return _command_decision(cmd)
    sentences = content_sentences(text, (turn.speaker_name,))
    if sum(len(words(s)) for s in sentences) < 3:
        return SKIP
    scored = [(s, sentence_signals(s)) for s in sentences]
    if turn.role == Role.assistant:
        decisions = [(s, sig) for s, sig in scored if sig.decision]
        if not decisions:
            return TriggerDecision(False, None, (), 0.1)
        s, sig = decisions[0]
        return TriggerDecision(True, memory_type(s, sig), ("decision",), 0.5)
    best, sig = max(scored, key=lambda item: _sentence_score(item[1]))
    confidence = round(min(0.95, 0.3 + _sentence_score(sig)), 3)
    should = confidence >= 0.45
    return TriggerDecision(should, memory_type(best, sig) if should else None,
                           _tags(sig) if should else (), confidence)
