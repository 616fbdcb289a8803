"""A fact's context vector: the conversation it was said in, for queries to find it by.

A fact is written from one sentence of a turn, and it often needs that turn, or the turn it
answers, to be found: "Nate is currently playing this awesome fantasy RPG called Xenoblade
Chronicles" answers "So what's your favorite game?", and "Nate made it with coconut milk,
vanilla extract, sugar and a pinch of salt" is about the ice cream of the turn before. The
question a user asks later names what the context named ("Nate's favorite video game", "the ice
cream recipe"). So a fact carries, beside the embedding of its summary, a context vector

    context = PREVIOUS_TURN_WEIGHT · e(previous turn) + SOURCE_TURN_WEIGHT · e(turn)

(each `e` the embedder's unit vector; the previous turn only when another speaker said it, the
turn this one answers (`context_of`); a turn written `"Speaker: text"` as its thread's buffer
holds it, secrets redacted), and a query searches it by normalise(e(summary) + context): the
summary keeps the largest weight, so what the fact says still decides what it is near. This
is document expansion in the embedding space, the idea of "contextual retrieval" without an
LLM to write the context.

Only queries use it (`UserIndex.query_similarities`). Dedup, forget-by-description, supersede
and links compare the summaries' embeddings alone: with the context mixed in, paraphrases said
in different sessions stopped merging (duplicate rate 0.2 % -> 1.3 % on LoCoMo) and "forget
Ana's car" also took the fact said right after the car was mentioned.

Measured on the six LoCoMo dev conversations (`bench locomo --offline`, defaults):
recall_any@10 0.753 -> 0.786, both cross-validation halves (docs/benchmarks.md#recall). Tried:
the summary and the turns concatenated into one text (worse than the summary alone, the long
text embeds less sharply), the previous turn alone (0.9 points less), the two turns as one text
(0.7 points less).

Episodes get no context: they describe a window, not one turn.
"""
from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from streams.language.memo import MEMO_MAX_CHARS, on_forget
from topics.candidates import Candidate
from topics.turns import Turn

PREVIOUS_TURN_WEIGHT = 0.5
SOURCE_TURN_WEIGHT = 0.3
TEXT_VECTORS_SIZE = 8192
"""Texts whose embeddings a worker keeps (`TextVectors`): the turns and summaries of as many
threads as talk at once, and of the candidates between ingest and dedup in a drained backlog
(12 MB of float32 vectors)."""


def turn_text(turn: Turn) -> str:
    """A turn as it is embedded for context: `"Speaker: text"`."""
    return f"{turn.speaker_name}: {turn.text}"


@dataclass(frozen=True)
class FactTexts:
    """What one fact's vectors are made from: its summary and, for a fact of one turn, that
    turn and the one before it in the thread (None when there is none)."""

    summary: str
    turn: str | None = None
    previous: str | None = None
    user_id: str = ""
    """Whose texts they are (`TextVectors` keeps them by user, so a purge forgets one user's)."""

    @classmethod
    def of(cls, candidate: Candidate) -> FactTexts:
        """The texts a candidate carries (its summary and, for a fact of one turn, its
        context's turns)."""
        return cls(candidate.fact.summary, candidate.context_turn, candidate.context_previous,
                   candidate.turn.user_id)

    def context(self) -> list[tuple[str, float]]:
        """(text, weight) of each part of the context vector."""
        parts = [(self.previous, PREVIOUS_TURN_WEIGHT), (self.turn, SOURCE_TURN_WEIGHT)]
        return [(text, weight) for text, weight in parts if text]


def context_of(turn: Turn, buffered: Sequence[dict[str, Any]]) -> tuple[str, str | None]:
    """(source turn, previous turn) texts of `turn`, from its thread's buffer (the turns as
    stored, texts redacted).

    The previous turn is the one before `turn` in the buffer, found by its id, so a replayed
    turn gets the same context whatever the buffer holds after it; and only when someone else
    said it: the turn this one answers. A speaker's own turn before is no question to this one
    ("I adopted a dog named Luna." then "I work as a nurse.": with the dog in its context, the
    nurse fact answered "What pet does Ana have?" as well as Luna's). None when `turn` opens
    the thread, follows its own speaker, or is no longer buffered (then the source turn is
    `turn` itself)."""
    at = next((i for i, t in enumerate(buffered) if t.get("turn_id") == turn.turn_id), None)
    if at is None:
        return turn_text(turn), None
    source = Turn.model_validate(buffered[at])
    before = Turn.model_validate(buffered[at - 1]) if at > 0 else None
    answered = before is not None and (before.speaker_name, before.role) != (source.speaker_name, source.role)
    return turn_text(source), turn_text(before) if answered and before is not None else None


class TextVectors:
    """The embeddings of the latest `size` texts embedded for facts (summaries and the turns
    their contexts are made of), shared by ingest and dedup of one worker (`Services.vectors`).

    Ingest embeds a batch's facts while dedup applies earlier ones, and a candidate carries
    its texts, not its vectors (`Candidate.context_turn`): dedup finds them here and makes no
    model call, unless the candidate was made by another worker (a rebalance) or long ago;
    then it embeds them again. That is exact for `local-int8`, which embeds one text a run: a
    text's vector does not depend on the texts beside it, so a replay after a crash decides as
    the first run did. A turn is also the previous turn of the next, which in a steady chat
    comes in a later batch: it is not embedded twice either.
    Like the write rules' memos (`streams.language.memo`) it holds recent texts: texts longer
    than `MEMO_MAX_CHARS` are not kept. It holds no stored memory's summary: dedup takes a
    summary's vector out as it applies the candidate (`fact_vectors(…, take_summaries=True)`),
    so what stays are the turns (as the threads' buffers keep them) and the summaries of
    candidates in flight. A purge of one memory leaves it alone, then, and a purge of a user
    forgets that user's texts only (`forget_texts`): the other users' candidates in flight
    still find theirs. (Emptied at each lifecycle purge, a drain of the six dev conversations
    embedded up to 18 % of dedup's texts again.)"""

    def __init__(self, size: int = TEXT_VECTORS_SIZE) -> None:
        self.size = size
        self._vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        alive = weakref.ref(self)  # a stage gone (a test's pipeline) leaves no vectors behind

        def forget(user_id: str | None) -> None:
            if (known := alive()) is not None:
                known.forget(user_id)
        on_forget(forget)

    def clear(self) -> None:
        self._vectors.clear()

    def forget(self, user_id: str | None) -> None:
        """Drop `user_id`'s texts (everyone's when None)."""
        if user_id is None:
            self.clear()
            return
        for key in [key for key in self._vectors if key[0] == user_id]:
            del self._vectors[key]

    def take(self, user_id: str, text: str) -> np.ndarray | None:
        """`get`, and the text is forgotten."""
        return self._vectors.pop((user_id, text), None)

    def get(self, user_id: str, text: str) -> np.ndarray | None:
        vector = self._vectors.get((user_id, text))
        if vector is not None:
            self._vectors.move_to_end((user_id, text))
        return vector

    def put(self, user_id: str, text: str, vector: np.ndarray) -> None:
        if len(text) > MEMO_MAX_CHARS or self.size <= 0:
            return
        self._vectors[(user_id, text)] = vector
        self._vectors.move_to_end((user_id, text))
        while len(self._vectors) > self.size:
            self._vectors.popitem(last=False)

    def __len__(self) -> int:
        return len(self._vectors)


async def fact_vectors(facts: Sequence[FactTexts], embed: Callable[[list[str]], Awaitable[np.ndarray]],
                       known: TextVectors | None = None, take_summaries: bool = False,
                       ) -> list[tuple[np.ndarray, np.ndarray | None]]:
    """(summary embedding, context vector or None) per fact, every distinct text embedded once
    in one model call (the facts of one turn share its turns, and a turn is the previous turn
    of the next); the texts in `known` are not embedded again, and those embedded now are
    added to it. `take_summaries` (dedup, applying the facts): the summaries are taken out of
    `known` instead, and the turns stay for the next turn's context."""
    if not facts:
        return []
    keys = list(dict.fromkeys((fact.user_id, text) for fact in facts
                              for text in (fact.summary, *(part for part, _ in fact.context()))))
    turns = {part for fact in facts for part, _ in fact.context()}
    taken = {fact.summary for fact in facts} - turns if take_summaries else set()
    at: dict[str, np.ndarray] = {}
    if known is not None:
        for user_id, text in keys:
            vector = known.take(user_id, text) if text in taken else known.get(user_id, text)
            if vector is not None:
                at.setdefault(text, vector)
    missing = list(dict.fromkeys(text for _, text in keys if text not in at))
    if missing:
        rows = np.asarray(await embed(missing), dtype=np.float32)
        for text, row in zip(missing, rows):
            at[text] = row.copy()  # a copy: a view would keep the whole batch alive
    if known is not None:
        for user_id, text in keys:
            if text not in taken:
                known.put(user_id, text, at[text])
    out: list[tuple[np.ndarray, np.ndarray | None]] = []
    for fact in facts:
        parts = fact.context()
        context = sum(weight * at[text] for text, weight in parts) if parts else None
        out.append((at[fact.summary], None if context is None else np.asarray(context, np.float32)))
    return out
