"""Procedural memory (seed 001 §12): "how to" steps, kept apart from facts and events.

A turn becomes a procedural memory only on an explicit trigger ("remember how to …", "the
steps are …", "here's how to …") or a high-confidence detection: three or more numbered
steps, or a stated goal ("To deploy the app, …", "How to …:") followed by at least two
numbered or ordered ("first … then … finally …") steps. Its summary is the goal and the steps
as numbered imperative sentences ("How to deploy the app: 1. Run the tests. 2. Push the
tag."), in the third person; its category is `Procedural`, which `memory.query` returns only
when a request names it (`streams.read.query.plan_query`). A procedural fact nothing here
detected (the rules extractor's "to X you need Y" sentences) is stored as a semantic fact.

The hooks in `streams.write.facts.FactPipeline`: `procedure_fact` before extraction, and
`decision_for` so the trigger lets a detected procedure through; `settle` on every kept fact.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from streams.write.policy import find_secrets
from streams.write.trigger import TriggerDecision
from streams.write.writing import validate_summary
from topics.candidates import Fact
from topics.turns import Role, Turn

CATEGORY = "Procedural"
TAG = "procedure"
HIGH_CONFIDENCE = 0.85
MAX_STEPS = 10

_EXPLICIT = re.compile(
    r"\b(?:(?:please\s+)?(?:remember|note|save|memori[sz]e|keep in mind)\s+how\s+(?:to|I|we)\s+"
    r"|here(?:'s|’s| is)\s+how\s+(?:to|I|we)\s+|the\s+steps\s+(?:to|for)\s+)"
    r"(?P<goal>[^:\n]{3,80}?)\s*(?::|\bare\b:?|-|–|—|,)\s*(?P<rest>.+)",
    re.I | re.S)
_STEPS_ARE = re.compile(r"\b(?:the\s+)?steps\s+are\s*:?\s*(?P<rest>.+)", re.I | re.S)
_GOAL = re.compile(r"^\s*(?:how\s+)?to\s+(?P<goal>[^:,\n]{3,80}?)\s*[:,]\s*(?P<rest>.+)", re.I | re.S)
_NUMBERED = re.compile(r"(?:^|(?<=\s))(?:step\s+)?\d{1,2}\s*[.):]\s+", re.I)
_ORDERED = re.compile(r"(?:^|[,;.]\s*|\s)(?:first(?:ly)?|then|next|after that|afterwards|finally|"
                      r"and then|lastly)\b[,:]?\s*", re.I)
_SUBJECT = re.compile(r"^(?:(?:and|so|just|also)\s+)*(?:i|we|you)\s+(?:(?:should|need to|have to|"
                      r"must|can|will|always|usually|then|just)\s+)*", re.I)


@dataclass(frozen=True)
class Procedure:
    goal: str | None
    steps: list[str]
    explicit: bool
    confidence: float


_LIST_SEPARATOR = re.compile(r"(?:(?<!\s)\s*|(?<=\s)(?!\s))(?:;|\n|,\s*(?:and\s+)?)\s*")
r"""Between the items of a list. A separator starts where a run of spaces starts, or right after
one: tried at every space of a long run, its leading `\s*` made a split quadratic in the run."""

def _split(rest: str) -> tuple[list[str], str]:
    """The steps of `rest` and how they were marked ("numbered", "ordered", "list")."""
    numbered = [s for s in _NUMBERED.split(rest) if s.strip()]
    if len(_NUMBERED.findall(rest)) >= 2:
        # the text before "1." is an introduction, not a step
        first = _NUMBERED.search(rest)
        body = rest[first.start():] if first else rest
        return [s for s in _NUMBERED.split(body) if s.strip()], "numbered"
    ordered = [s for s in _ORDERED.split(rest) if s and s.strip(" ,;.")]
    if len(_ORDERED.findall(rest)) >= 2 and len(ordered) >= 2:
        return ordered, "ordered"
    return [s for s in _LIST_SEPARATOR.split(rest) if s.strip()] or numbered, "list"


def imperative(step: str) -> str:
    """One step as an imperative sentence: no subject ("I run the tests" → "Run the tests")."""
    text = re.sub(r"\s+", " ", step).strip(" ,;.-–—")
    text = _SUBJECT.sub("", text)
    return (text[:1].upper() + text[1:] + ".") if text else ""


def detect(text: str) -> Procedure | None:
    """The procedure in `text`, with how confident the detection is; None when there is none."""
    explicit = _EXPLICIT.search(text)
    goal: str | None
    if explicit:
        goal, rest, is_explicit = explicit.group("goal"), explicit.group("rest"), True
    elif steps_are := _STEPS_ARE.search(text):
        before = _GOAL.match(text[:steps_are.start()] + ":")
        goal = before.group("goal") if before else None
        rest, is_explicit = steps_are.group("rest"), True
    elif stated := _GOAL.match(text):
        goal, rest, is_explicit = stated.group("goal"), stated.group("rest"), False
    else:
        goal, rest, is_explicit = None, text, False
    parts, marking = _split(rest)
    steps = [s for s in (imperative(p) for p in parts) if len(s.split()) >= 1 and len(s) > 2]
    if len(steps) < 2:
        return None
    if is_explicit:
        confidence = 0.95
    elif marking == "numbered" and (len(steps) >= 3 or goal):
        confidence = 0.9
    elif marking == "ordered" and goal:
        confidence = HIGH_CONFIDENCE
    else:
        confidence = 0.6
    return Procedure(goal.strip(" ,:") if goal else None, steps[:MAX_STEPS], is_explicit, confidence)


def _third_person(text: str, name: str) -> str:
    text = re.sub(r"\b(?:my|our)\b", f"{name}'s", text, flags=re.I)
    text = re.sub(r"\b(?:I|we)\b", name, text)
    return re.sub(r"\b(?:me|us|myself)\b", name, text, flags=re.I)


def summary_of(procedure: Procedure, name: str, max_chars: int) -> str:
    """"How to {goal}: 1. Step. 2. Step." with as many steps as fit in `max_chars`."""
    head = f"How to {_third_person(procedure.goal, name)}:" if procedure.goal else "Steps:"
    out = head
    for n, step in enumerate(procedure.steps, 1):
        line = f"{out} {n}. {_third_person(step, name)}"
        if len(line) > max_chars:
            break
        out = line
    return out


def procedure_fact(turn: Turn, max_chars: int = 280) -> Fact | None:
    """The procedural fact of a user turn, when one is detected with high confidence and its
    summary meets the writing constraints (else None: the turn goes through extraction)."""
    if turn.role != Role.user:
        return None
    procedure = detect(turn.text)
    if procedure is None or procedure.confidence < HIGH_CONFIDENCE:
        return None
    summary = summary_of(procedure, turn.speaker_name, max_chars)
    if summary.count(". ") + summary.endswith(".") < 2 or find_secrets(summary):
        return None
    if validate_summary(summary, "procedural", max_chars=max_chars):
        return None
    tags = [TAG, *(["explicit"] if procedure.explicit else [])]
    return Fact(type="procedural", summary=summary, category=CATEGORY,
                importance=4 if procedure.explicit else 3, tags=tags)


def decision_for(decision: TriggerDecision, procedure: Fact | None) -> TriggerDecision:
    """The trigger's decision, letting a detected procedure through (an explicit forget or
    "don't remember this" keeps precedence: `FactPipeline._gate` checks it first)."""
    if procedure is None or decision.should_create and decision.confidence >= HIGH_CONFIDENCE:
        return decision
    return TriggerDecision(True, "procedural", (TAG,), max(decision.confidence, HIGH_CONFIDENCE),
                           decision.command)


def settle(fact: Fact) -> Fact:
    """A procedure detected here is `Procedural`; any other procedural fact (no list of steps
    detected) is stored as a semantic fact (seed 001 §12: only on trigger or high confidence)."""
    if fact.type != "procedural":
        return fact
    if TAG in fact.tags:
        return fact if fact.category == CATEGORY else fact.model_copy(update={"category": CATEGORY})
    return fact.model_copy(update={"type": "semantic"})
