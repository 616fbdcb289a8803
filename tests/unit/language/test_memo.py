"""The write rules read each sentence of a turn once (`streams.language.memo`), and a purge
empties what they remember."""
from __future__ import annotations

from collections import Counter
from datetime import datetime, timezone

import numpy as np
import pytest

from streams.language import memo, signals
from streams.language.signals import sentence_signals
from streams.memory.candidates import apply_candidate
from streams.memory.purge import purge_user, scrub_memory
from streams.memory.state import MemoryState
from streams.memory.vector_index import VectorIndex
from streams.pipeline.tables import stage_tables
from streams.privacy.crypto import new_key
from streams.privacy.sealed import TABLE_OWNERS
from streams.providers.embedders import EmbedderProfile
from streams.settings import WriteSettings
from streams.write.facts import FactPipeline
from topics.candidates import Candidate, Fact
from topics.turns import Role, Turn
from tests import defaults

TS = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)


@pytest.fixture
def signalled(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times each sentence's signals were computed (not answered from the memo)."""
    memo.forget_texts()
    computed: Counter[str] = Counter()
    entities_of = signals._entities_of

    def counting(sentence: str) -> tuple[str, ...]:
        computed[sentence] += 1
        return entities_of(sentence)
    monkeypatch.setattr(signals, "_entities_of", counting)
    return computed


def _state() -> MemoryState:
    return MemoryState(stage_tables({name: {} for name in TABLE_OWNERS}, {}, new_key()).memory,
                       VectorIndex(2), defaults.dedup(EmbedderProfile("test", 2, 0.9, 0.8, 0.92, 0.85)))


def test_the_trigger_and_the_extractor_read_each_sentence_of_a_turn_once(signalled: Counter[str]) -> None:
    turn = Turn(user_id="u1", thread_id="t1", turn_id="1", role=Role.user, speaker="Caroline",
                text="I adopted a dog named Luna last week. I work as a nurse in Lisbon.", ts=TS)
    facts = FactPipeline(WriteSettings()).facts(turn)
    assert len(facts.facts) == 2
    assert signalled and max(signalled.values()) == 1, signalled


def test_a_purge_empties_the_memos(signalled: Counter[str]) -> None:
    sentence_signals("Ana has a dog named Luna.")
    sentence_signals("Ana has a dog named Luna.")
    assert signalled["Ana has a dog named Luna."] == 1
    purge_user(_state(), "u", "t1", TS)
    sentence_signals("Ana has a dog named Luna.")
    assert signalled["Ana has a dog named Luna."] == 2


def test_purging_one_memory_empties_the_memos(signalled: Counter[str]) -> None:
    state = _state()
    turn = Turn(user_id="u", thread_id="t1", turn_id="1", role=Role.user, speaker="Ana", text="x", ts=TS)
    candidate = Candidate(turn=turn, fact=Fact(type="semantic", summary="Ana has a dog named Luna."),
                          fact_index=0, fact_count=1, confidence=0.9)
    applied = apply_candidate(state, candidate, np.asarray([1.0, 0.0], dtype=np.float32))
    memory = state.memory(applied.memory_id)
    assert memory is not None
    sentence_signals("Ana has a dog named Luna.")
    scrub_memory(state, memory, state.history(memory.id))
    sentence_signals("Ana has a dog named Luna.")
    assert signalled["Ana has a dog named Luna."] == 2


def test_a_long_text_is_read_afresh_every_time(signalled: Counter[str]) -> None:
    long = "Ana has a dog named Luna. " * (memo.MEMO_MAX_CHARS // 20)
    assert sentence_signals(long) == sentence_signals(long)
    assert signalled[long] == 2


def test_a_memoised_answer_is_the_functions(signalled: Counter[str]) -> None:
    for sentence in ("I adopted a dog named Luna.", "We're going to Paris next summer!", ""):
        first, again = sentence_signals(sentence), sentence_signals(sentence)
        assert first == again == sentence_signals.__wrapped__(sentence)  # type: ignore[attr-defined]


def test_a_turns_content_sentences_are_scored_once_and_forgotten_with_a_purge(monkeypatch) -> None:
    from streams.language import fact_sentences

    memo.forget_texts()
    scored: Counter[str] = Counter()
    skippable = fact_sentences.skippable

    def counting(sentence: str, names: tuple[str, ...] = ()) -> bool:
        scored[sentence] += 1
        return skippable(sentence, names)
    monkeypatch.setattr(fact_sentences, "skippable", counting)
    sentences = ["I adopted a dog named Luna last week.", "Hi Mel!"]
    first = fact_sentences.content_parts(sentences, Role.user, ("Ana",))
    again = fact_sentences.content_parts(list(sentences), Role.user, ("Ana",))
    assert first == again and first is not again, "a fresh list each time"
    assert first[1] is None and first[0] is not None and first[0].own
    assert scored == {s: 1 for s in sentences}
    purge_user(_state(), "u", "t1", TS)
    fact_sentences.content_parts(sentences, Role.user, ("Ana",))
    assert scored == {s: 2 for s in sentences}
    long = ["I adopted a dog named Luna last week. " * 20] * 2  # past MEMO_MAX_CHARS together
    fact_sentences.content_parts(long, Role.user)
    fact_sentences.content_parts(long, Role.user)
    assert scored[long[0]] == 4, "read afresh every time"


def test_a_neighbours_slot_is_read_once_for_all_the_candidates_it_meets(monkeypatch) -> None:
    from streams.memory import dedup

    memo.forget_texts()
    matched: Counter[str] = Counter()
    pattern = dedup._SLOT

    class Counting:
        def match(self, text: str):  # type: ignore[no-untyped-def]
            matched[text] += 1
            return pattern.match(text)
    monkeypatch.setattr(dedup, "_SLOT", Counting())
    old = "Ana lives in Berlin."
    assert dedup.changed_slot("Ana lives in Lisbon.", old)
    assert not dedup.changed_slot("Ana lives in Berlin with Rui.", old)
    assert matched[old] == 1
    memo.clear_memos()  # a purged memory's summary is not kept
    dedup.changed_slot("Ana lives in Lisbon.", old)
    assert matched[old] == 2
