"""Pydantic models of what each task must answer; anything else is invalid output (→ rules).

Lists are trimmed rather than rejected ("reject or trim", seed 001 §9); a summary that breaks the
writing constraints is rejected.
"""
from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

Kind = Literal["semantic", "episodic", "procedural"]
Category = Literal["Finance", "Budget", "Goals", "Personal", "Education", "Conversation_Summary", "Other"]
Tag = Annotated[str, StringConstraints(strip_whitespace=True, to_lower=True, min_length=1, max_length=40)]
Entity = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=80)]

MAX_FACTS, MAX_TAGS, MAX_ENTITIES, MAX_TRIGGER_TAGS = 3, 6, 8, 5
MAX_BATCH_TURNS = 16
"""The most turns one trigger or extraction call asks about (`LLM_BATCH_TURNS` is capped by it)."""
SUMMARY_MAX_CHARS = 280

_FIRST_PERSON = re.compile(r"\b(?:i|me|my|mine|myself)\b", re.IGNORECASE)
# A sentence break, not after an initial or a short title ("J. Smith", "Dr. Lee", "Mrs. Ray").
_SENTENCE_BREAK = re.compile(r"(?<!\b[A-Z])(?<!\b[A-Z][a-z])(?<!\b[A-Z][a-z]{2})[.!?]+\s+(?=\S)")
_ENTITY_KEY = re.compile(r"^[a-z][a-z0-9_]*(?::[a-z0-9_.\-]+){1,5}$")


def _first(limit: int) -> BeforeValidator:
    """Keep the first `limit` items of a list (trim, don't reject)."""
    return BeforeValidator(lambda value: value[:limit] if isinstance(value, list) else value)


def _most(limit: int) -> dict[str, Any]:
    """`maxItems` in the JSON schema a server may constrain with (`structured.py`): a small model
    under a grammar otherwise lists until max_tokens cuts it. Validation trims instead."""
    return {"maxItems": limit}


class _Output(BaseModel):
    """Unknown extra keys (a "reason" the model adds) are ignored, wrong types are not."""

    model_config = ConfigDict(extra="ignore")


class TriggerOutput(_Output):
    should_create: bool
    type_hint: Kind | None = None
    tags_hint: Annotated[list[Tag], _first(MAX_TRIGGER_TAGS)] = Field(default_factory=list, json_schema_extra=_most(MAX_TRIGGER_TAGS))
    confidence: float = Field(ge=0.0, le=1.0)


class FactOutput(_Output):
    type: Kind | None = None
    summary: str = Field(json_schema_extra={"maxLength": SUMMARY_MAX_CHARS})
    category: Category
    tags: Annotated[list[Tag], _first(MAX_TAGS)] = Field(default_factory=list, json_schema_extra=_most(MAX_TAGS))
    entities: Annotated[list[Entity], _first(MAX_ENTITIES)] = Field(
        default_factory=list, json_schema_extra=_most(MAX_ENTITIES))
    importance: int = Field(ge=1, le=5)
    entity_key: str | None = None

    @field_validator("summary")
    @classmethod
    def _writing_constraints(cls, value: str) -> str:
        """Seed 001 §9: 1–2 sentences, ≤ 280 chars, third person."""
        text = re.sub(r"\s+", " ", value).strip()
        if not text:
            raise ValueError("empty summary")
        if len(text) > SUMMARY_MAX_CHARS:
            raise ValueError("summary longer than 280 characters")
        if len(_SENTENCE_BREAK.findall(text)) > 1:
            raise ValueError("summary has more than 2 sentences")
        if _FIRST_PERSON.search(text):
            raise ValueError("summary is not in the third person")
        return text

    @field_validator("entity_key", mode="before")
    @classmethod
    def _key(cls, value: Any) -> Any:
        """Lowercase, spaces to underscores, then it must look like `profile:pet:luna:age`."""
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        if not isinstance(value, str):
            raise ValueError("entity_key must be a string")  # noqa: TRY004 - pydantic reports ValueError
        key = re.sub(r"\s+", "_", value.strip().lower())
        if not _ENTITY_KEY.match(key):
            raise ValueError("entity_key is not of the form a:b[:c…]")
        return key


class ExtractionOutput(_Output):
    decision: Literal["skip", "semantic", "episodic", "procedural"]
    facts: Annotated[list[FactOutput], _first(MAX_FACTS)] = Field(default_factory=list, json_schema_extra=_most(MAX_FACTS))

    @model_validator(mode="before")
    @classmethod
    def _nothing_on_skip(cls, data: Any) -> Any:
        """A "skip" stores nothing, whatever facts come with it (a small model under a grammar
        often lists some anyway): they are not validated, so they cannot fail the answer."""
        if isinstance(data, dict) and data.get("decision") == "skip":
            return {**data, "facts": []}
        return data

    @model_validator(mode="after")
    def _facts_unless_skip(self) -> ExtractionOutput:
        if self.decision != "skip" and not self.facts:
            raise ValueError(f"decision {self.decision!r} without facts")
        return self


class TriggerItem(TriggerOutput):
    """The trigger's answer for turn `n` of a call (numbered from 1 in the order asked)."""

    n: int = Field(ge=1)


class ExtractionItem(ExtractionOutput):
    """The classifier's answer for turn `n` of a call."""

    n: int = Field(ge=1)


class TriggerBatch(_Output):
    """What a trigger call answers: one item per turn asked. Validated item by item
    (`parsing.parse_items`): a bad item falls back for its turn alone; this model gives the
    JSON schema a server may constrain with."""

    turns: list[TriggerItem] = Field(json_schema_extra=_most(MAX_BATCH_TURNS))


class ExtractionBatch(_Output):
    """What an extraction call answers: one item per turn asked (see `TriggerBatch`)."""

    turns: list[ExtractionItem] = Field(json_schema_extra=_most(MAX_BATCH_TURNS))


class SameFactOutput(_Output):
    same_fact: bool


def _lifecycle_summary(value: str, max_sentences: int) -> str:
    """A background summary: one line, ≤ 280 chars, at most `max_sentences`, third person."""
    text = re.sub(r"\s+", " ", value).strip()
    if not text:
        raise ValueError("empty summary")
    if len(text) > SUMMARY_MAX_CHARS:
        raise ValueError("summary longer than 280 characters")
    if len(_SENTENCE_BREAK.findall(text)) >= max_sentences:
        raise ValueError(f"summary has more than {max_sentences} sentences")
    if _FIRST_PERSON.search(text):
        raise ValueError("summary is not in the third person")
    return text


class ConsolidationOutput(_Output):
    """One consolidated memory of a cluster of episodes (seed 000 §4: 1–3 sentences with
    dates, actors and outcome)."""

    summary: str

    @field_validator("summary")
    @classmethod
    def _writing_constraints(cls, value: str) -> str:
        return _lifecycle_summary(value, 3)


_ABOUT_THE_AI = re.compile(r"\b(?:assistant|the ai|chatbot|the bot|the model)\b", re.IGNORECASE)


class InsightItem(_Output):
    summary: str
    tags: Annotated[list[Tag], _first(MAX_TAGS)] = Field(default_factory=list)
    importance: int = Field(2, ge=1, le=5)

    @field_validator("summary")
    @classmethod
    def _writing_constraints(cls, value: str) -> str:
        """Seed 001 §3: third person, ≤ 280 chars, nothing about the AI itself."""
        text = _lifecycle_summary(value, 2)
        if _ABOUT_THE_AI.search(text):
            raise ValueError("insight refers to the AI")
        return text


class InsightOutput(_Output):
    """Theory-of-mind insights (seed 001 §3): 0–3 of them (empty: nothing worth noting)."""

    insights: Annotated[list[InsightItem], _first(3)] = Field(default_factory=list, json_schema_extra=_most(3))


MAX_QUERY_PARTS = 4
"""The most searches a question is split into (each is one more lexical search of the index)."""
QUERY_PART_MAX_CHARS = 200

QueryPart = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1,
                                             max_length=QUERY_PART_MAX_CHARS)]


class QueryPartsOutput(_Output):
    """The searches a question that combines facts needs, one per fact its answer takes
    (`streams.read.model_parts`): 1 to `MAX_QUERY_PARTS` short queries."""

    parts: Annotated[list[QueryPart], _first(MAX_QUERY_PARTS)] = Field(
        min_length=1, json_schema_extra=_most(MAX_QUERY_PARTS))
