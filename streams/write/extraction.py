"""Rules extractor (docs/architecture.md#write-path Extraction): up to `max_facts` third-person facts from one turn.

No model: the extractor is a list of named steps (`STEPS`), each a small function run in turn
order on the turn's `Draft` until one has the answer. The language rules the steps apply live in
`streams/language/`: sentences are split and cleaned, greetings/filler/questions/reactions
dropped, the rest scored by cheap signals (first person, preferences, plans, life events, names,
numbers, dates) and the best ones (`fact_sentences.fact_sentences`) each written as one fact
(`rewriting.fact_summary`): relative dates resolved against the turn's time (`dates.resolve_dates`,
"last Saturday" → "on 6 May 2023"), first person rewritten in the third person naming the
speaker, a statement without first person attributed ("Ana said the trail is steep."),
intensifiers and exclamations dropped (neutral tone). A shared photo (an image caption,
`captions.py`) becomes "Ana shared a photo of …". Each summary is checked with
`writing.validate_summary` after `writing.normalise_summary` (seed 001 §9) and dropped when it
still fails; each fact is classified (type, category, importance, tags, entities, entity key).

No spaCy: the official English models are not published on PyPI (only third-party re-uploads
of their weights are), and even a re-upload of en_core_web_sm 3.8, measured on the LoCoMo
development turns on the project machine, cost 3.4 ms a turn for sentence splitting alone
(tok2vec + senter), 8.5 ms with named entities and 9.8 ms for the full pipeline — against about
1.2 ms for this whole extractor (`python -m benchmarks.extraction_profile`).

Sentences that open on a pronoun ("It was Matt Patterson.", "They're my rock.") are not written:
they answer a question or lean on a sentence the fact would not carry. Each fact is one sentence:
on the LoCoMo development set, joining a neighbouring sentence (for context, or when the best
sentence is short) lowered recall, the longer summary embedding less sharply.

What it should write is measured on labelled sentences (`memstream bench details`) and pinned
by hand-reviewed golden turns (tests/unit/language/test_golden.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import Any, Callable, NamedTuple
from zoneinfo import ZoneInfo

from streams.language.captions import caption_words, shared_photo, split_image_caption
from streams.language.dates import mentioned_interval
from streams.language.fact_sentences import Part, fact_sentences, note_sentence
from streams.language.mentions import (
    entity_key,
    fact_entities,
    fact_tags,
    resolve_he_she,
    split_compound,
)
from streams.language.rewriting import fact_summary
from streams.language.sentences import clean_sentence
from streams.language.splitting import split_sentences
from streams.language.signals import Signals, memory_type, sentence_signals
from streams.write.categories import categorise
from streams.write.importance import ImportanceInputs, salience
from streams.write.importance import level as importance_level
from streams.write.policy import find_secrets
from streams.write.sentiment import Sentiment, intensity_norm, sentiment
from streams.write.trigger import CommandKind, parse_command
from streams.write.writing import normalise_summary, validate_summary
from topics.candidates import Fact
from topics.turns import Role, Turn

_TRUST = {Role.user: 0.7, Role.assistant: 0.5, Role.tool: 0.5, Role.system: 0.5}
"""Seed 000 §3 trust of what a turn says: the user about themself above the assistant."""


def annotations(source: str, day: date) -> dict[str, Any]:
    """The `Fact` fields read from the words a fact was written from, said on `day`: valence
    and intensity (VADER) and the span of the dates it mentions (relative ones resolved)."""
    feeling = sentiment(source)
    span = mentioned_interval(source, day)
    return {"valence": feeling.valence, "intensity": feeling.intensity,
            "event_start": span[0] if span else None, "event_end": span[1] if span else None}


def _turn_day(turn: Turn) -> date:
    """The turn's calendar day in its time zone (UTC when unknown)."""
    try:
        return turn.ts.astimezone(ZoneInfo(turn.timezone)).date() if turn.timezone else turn.ts.date()
    except (KeyError, ValueError):
        return turn.ts.date()


def fit(text: str, max_chars: int) -> str:
    """Tidy a summary: one line, capitalised, ends with a period, ≤ max_chars (word boundary)."""
    return normalise_summary(text, max_chars, max_sentences=0)


@dataclass
class Draft:
    """What the steps know of one turn so far; a step that has the answer sets `done`."""

    turn: Turn
    text: str = ""
    """The turn's text without its image caption."""
    caption: str | None = None
    sentences: list[str] = field(default_factory=list)
    """Cleaned sentences, pronouns resolved, compounds split."""
    picked: list[Part] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    done: bool = False


class Step(NamedTuple):
    """One named step of the extractor."""

    name: str
    run: Callable[[RulesExtractor, Draft], None]


class RulesExtractor:
    """Turn → up to `max_facts` facts, by rules only (an empty list means skip)."""

    def __init__(self, max_facts: int = 3, max_chars: int = 280) -> None:
        """At most `max_facts` facts per turn, summaries of at most `max_chars` (≤ 280)."""
        self.max_facts = max_facts
        self.max_chars = min(max_chars, 280)
        self.stats = {"drafted": 0, "first_pass": 0, "repaired": 0, "rejected": 0}
        """Writing-constraint counters (seed 001 §9) over sentence facts: drafts, drafts that
        passed `validate_summary` as written, drafts that passed only after
        `normalise_summary` (trimmed, punctuation fixed), drafts rejected."""

    steps: tuple[Step, ...] = ()
    """The named steps `extract` runs in order (`STEPS`, set below)."""

    def extract(self, turn: Turn) -> list[Fact]:
        """Facts worth remembering from `turn`, in turn order: each of `steps` in turn, until
        one has the answer."""
        draft = Draft(turn)
        for step in self.steps:
            step.run(self, draft)
            if draft.done:
                break
        return draft.facts

    def _write(self, turn: Turn, sentence: str, own: bool, text: str) -> str:
        """The draft summary of one sentence (`fact_summary`): relative dates resolved, third
        person naming the speaker ("Ana said …" for a statement without first person),
        intensifiers dropped."""
        return fact_summary(sentence, turn.speaker_name, _turn_day(turn),
                            assistant=turn.role == Role.assistant, own=own, text=text)

    def sentence_fact(self, turn: Turn, part: Part, text: str) -> Fact | None:
        """One sentence written as a fact, or None when the summary fails the writing
        constraints (seed 001 §9) even after `normalise_summary`."""
        self.stats["drafted"] += 1
        draft = self._write(turn, part.text, part.own, text)
        summary = normalise_summary(draft, self.max_chars)
        kind = self._kind(part.text, part.sig)
        if validate_summary(summary, kind, max_chars=self.max_chars) or find_secrets(summary):
            self.stats["rejected"] += 1
            return None
        if validate_summary(draft, kind, max_chars=self.max_chars):
            self.stats["repaired"] += 1
        else:
            self.stats["first_pass"] += 1
        return self._make(turn, summary, kind, part.text, part.sig)

    @staticmethod
    def _kind(sentence: str, sig: Signals) -> str:
        """semantic | episodic | procedural; a deterministic key makes it semantic."""
        return "semantic" if entity_key(sentence) else memory_type(sentence, sig)

    def _make(self, turn: Turn, summary: str, kind: str, source: str, sig: Signals, *,
              explicit: bool = False, pinned: bool = False, extra_tags: tuple[str, ...] = (),
              salience_value: float | None = None) -> Fact:
        """The fact record: category, importance, valence/intensity, the dates it mentions,
        tags, entities and key from `source` (the turn's own words)."""
        name = turn.speaker_name
        key = entity_key(source)
        full = sentence_signals(source)
        notes = annotations(source, _turn_day(turn))
        feeling = Sentiment(notes["valence"], notes["intensity"])
        inputs = ImportanceInputs(
            salience=salience(source, full, key is not None, summary,
                              dated=notes["event_start"] is not None)
            if salience_value is None
            else salience_value,
            trust=_TRUST[turn.role], intensity_norm=intensity_norm(feeling), explicit=explicit,
            pinned=pinned)
        return Fact(
            type=kind, summary=summary, category=categorise(source),
            importance=importance_level(inputs), **notes,
            tags=list(dict.fromkeys([*extra_tags, *fact_tags(source, full, name)]))[:6],
            entities=fact_entities(source, full, name), entity_key=key,
        )

    def command_facts(self, turn: Turn, kind: CommandKind, payload: str) -> list[Fact]:
        """"remember …" / "pin …": the payload as one high-importance fact."""
        if kind not in (CommandKind.remember, CommandKind.pin) or not payload:
            return []
        sig = sentence_signals(payload)
        summary = self._checked_summary(turn, payload, True, payload)
        if summary is None:
            return []
        kind_ = self._kind(payload, sig)
        return [self._make(turn, summary, kind_, payload, sig, explicit=True,
                           pinned=kind == CommandKind.pin, extra_tags=("explicit",))]

    def note_fact(self, turn: Turn, text: str, caption: str | None) -> Fact | None:
        """What a user said, when no sentence of the turn made a fact (`note_sentence`): its
        most contentful sentence, written as the speaker's ("Jon said …" or, in the first
        person, "Jon …")."""
        sentence = note_sentence(text, (turn.speaker_name,), image=bool(caption))
        if sentence is None:
            return None
        sig = sentence_signals(sentence)
        summary = self._checked_summary(turn, sentence, sig.first_person, text)
        if summary is None:
            return None
        return self._make(turn, summary, "semantic", sentence, sig, extra_tags=("note",))

    def _checked_summary(self, turn: Turn, sentence: str, own: bool, text: str) -> str | None:
        """`sentence` written as a semantic fact's summary (`_write`, `normalise_summary`), or
        None when it fails the writing constraints or holds a secret."""
        summary = normalise_summary(self._write(turn, sentence, own, text), self.max_chars)
        if validate_summary(summary, "semantic", max_chars=self.max_chars) or find_secrets(summary):
            return None
        return summary

    def caption_fact(self, turn: Turn, caption: str) -> Fact | None:
        """A shared image (its caption, `streams/language/captions.py`) as a low-importance
        fact: "Ana shared a photo of a dog on a sofa."."""
        summary = normalise_summary(f"{turn.speaker_name} shared {shared_photo(caption)}",
                                    self.max_chars)
        if validate_summary(summary, "semantic", max_chars=self.max_chars):
            return None
        source = caption_words(caption)
        fact = self._make(turn, summary, "semantic", source, sentence_signals(source),
                          extra_tags=("image",), salience_value=1 / 3)
        return fact.model_copy(update={"category": "Personal", "entity_key": None})

    @staticmethod
    def without_repeats(facts: list[Fact]) -> list[Fact]:
        """Drop facts whose summary repeats an earlier one."""
        seen: set[str] = set()
        return [f for f in facts if not (f.summary.lower() in seen or seen.add(f.summary.lower()))]


# --- the steps, in the order `extract` runs them -------------------------------------------


def _speaker_roles(ex: RulesExtractor, d: Draft) -> None:
    """Only what the user and the assistant say holds facts (tool and system turns none)."""
    d.done = d.turn.role not in (Role.user, Role.assistant)


def _image_caption(ex: RulesExtractor, d: Draft) -> None:
    """The turn's text and its shared image's caption, apart."""
    d.text, d.caption = split_image_caption(d.turn.text)


def _secrets(ex: RulesExtractor, d: Draft) -> None:
    """A turn holding a secret leaves nothing: if unsure, don't store (seed 004 §2)."""
    d.done = bool(find_secrets(d.turn.text))


def _commands(ex: RulesExtractor, d: Draft) -> None:
    """"remember …" / "pin …" said by the user: its payload is the turn's one fact."""
    if d.turn.role == Role.user and (cmd := parse_command(d.text)):
        d.facts, d.done = ex.command_facts(d.turn, cmd.kind, cmd.payload), True


def _sentences(ex: RulesExtractor, d: Draft) -> None:
    """Split and clean the sentences, resolve he/she to the name, split compounds."""
    d.sentences = [atom for s in resolve_he_she([clean_sentence(s, image=bool(d.caption))
                                                 for s in split_sentences(d.text)])
                   for atom in split_compound(s)]


def _pick(ex: RulesExtractor, d: Draft) -> None:
    """The best `max_facts` sentences to write facts from (`fact_sentences`)."""
    d.picked = fact_sentences(d.sentences, d.turn.role, (d.turn.speaker_name,), ex.max_facts)


def _sentence_facts(ex: RulesExtractor, d: Draft) -> None:
    """Each picked sentence written as a fact (those failing the writing constraints dropped)."""
    d.facts = [f for part in d.picked if (f := ex.sentence_fact(d.turn, part, d.text))]


def _note(ex: RulesExtractor, d: Draft) -> None:
    """A user turn that made no fact: its most contentful sentence, as a note."""
    if not d.facts and d.turn.role == Role.user and (note := ex.note_fact(d.turn, d.text, d.caption)):
        d.facts.append(note)


def _shared_photo(ex: RulesExtractor, d: Draft) -> None:
    """A photo the user shared, when there is room: "Ana shared a photo of …"."""
    if (d.caption and d.turn.role == Role.user and len(d.facts) < ex.max_facts
            and (fact := ex.caption_fact(d.turn, d.caption))):
        d.facts.append(fact)


def _repeats(ex: RulesExtractor, d: Draft) -> None:
    """Drop facts whose summary repeats an earlier one."""
    d.facts = ex.without_repeats(d.facts)


STEPS: tuple[Step, ...] = tuple(Step(name, run) for name, run in (
    ("speaker_roles", _speaker_roles), ("image_caption", _image_caption), ("secrets", _secrets),
    ("commands", _commands), ("sentences", _sentences), ("pick", _pick),
    ("sentence_facts", _sentence_facts), ("note", _note), ("shared_photo", _shared_photo),
    ("repeats", _repeats),
))
"""The rules extractor, step by step; a new rule is a new named step in its place here."""
RulesExtractor.steps = STEPS
