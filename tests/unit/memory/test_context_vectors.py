"""Context vectors (`streams.write.contextual`): queries search by them, the write side does not."""
from __future__ import annotations

import numpy as np
import pytest

from streams.memory.candidates import apply_candidate
from streams.memory.model import Memory
from streams.memory.vector_index import (
    HALF_PREFIX,
    INT8_PREFIX,
    VectorIndex,
    decode_vector,
    encode_context_vector,
    encode_vector,
)
from streams.language.memo import MEMO_MAX_CHARS, clear_memos, forget_texts
from streams.write.contextual import FactTexts, TextVectors, context_of, fact_vectors
from tests.unit.memory.test_memory_state import cand, state, vec
from topics.turns import Turn

CONTEXT = np.asarray([0.0, 2.0], dtype=np.float32)
"""A context far stronger than the summary's own direction, so its effect is plain to see."""


def with_context(turn_id: str, summary: str, context: np.ndarray = CONTEXT):  # type: ignore[no-untyped-def]
    return cand(turn_id, summary).model_copy(update={"context_b64": encode_vector(context)})


def test_a_query_searches_by_summary_plus_context_and_the_write_side_by_the_summary() -> None:
    s = state()
    made = apply_candidate(s, with_context("1", "Nate made it with coconut milk."), vec(1, 0))
    plain = apply_candidate(s, cand("2", "Ana has a dog named Luna."), vec(-1, 0))
    index = s.index.user("u")
    about_the_context = vec(0, 1)
    row, plain_row = index.row(made.memory_id), index.row(plain.memory_id)
    assert index.similarities(about_the_context)[row] == pytest.approx(0.0, abs=1e-3)
    assert index.query_similarities(about_the_context)[row] == pytest.approx(2 / np.sqrt(5), abs=1e-3)
    # a memory without a context is searched by its summary alone, both ways
    assert index.query_similarities(vec(-1, 0))[plain_row] == pytest.approx(1.0, abs=1e-3)
    assert index.context_b64(plain.memory_id) is None
    # dedup compares summaries: the same summary said again merges, whatever its context
    again = apply_candidate(s, with_context("3", "Nate made it with coconut milk.", np.asarray([0.0, -2.0])),
                    vec(1, 0))
    assert (again.outcome, again.memory_id) == ("updated", made.memory_id)


def test_the_document_keeps_its_context_through_changes_and_a_rebuild() -> None:
    s = state()
    made = apply_candidate(s, with_context("1", "Nate made it with coconut milk."), vec(1, 0))
    apply_candidate(s, cand("2", "Nate made it with coconut milk."), vec(1, 0))  # a merge, from the index's copy
    stored = s.memory(made.memory_id)
    assert stored is not None and stored.context_b64 is not None
    assert np.allclose(decode_vector(stored.context_b64), CONTEXT, atol=1e-2)
    assert s.index.user("u").docs[made.memory_id].context_b64 is None, "held once, in the matrix"
    rebuilt = VectorIndex(2)
    rebuilt.rebuild(Memory.model_validate(raw) for raw in s.tables.memories.values())
    query = vec(0, 1)
    assert np.allclose(rebuilt.user("u").query_similarities(query),
                       s.index.user("u").query_similarities(query), atol=1e-3)


def test_a_context_vector_is_stored_in_int8_and_the_float16_of_before_still_reads() -> None:
    rng = np.random.default_rng(7)
    context = rng.standard_normal(384).astype(np.float32)
    stored = encode_context_vector(context)
    assert stored.startswith(INT8_PREFIX) and len(stored) < len(encode_vector(context)) * 0.7
    back = decode_vector(stored)
    assert float(back @ context / (np.linalg.norm(back) * np.linalg.norm(context))) > 0.9999
    assert np.max(np.abs(back - context)) <= np.max(np.abs(context)) / 254 + 1e-6
    assert not decode_vector(encode_context_vector(np.zeros(4))).any()
    s = state()  # a candidate of before, its context in float16: stored as it came, read as it was
    made = apply_candidate(s, with_context("1", "Nate made it with coconut milk."), vec(1, 0))
    assert s.memory(made.memory_id).context_b64.startswith(HALF_PREFIX)  # type: ignore[union-attr]
    apply_candidate(s, cand("2", "Nate made it with coconut milk."), vec(1, 0))  # a merge: from the index's copy
    merged = s.memory(made.memory_id).context_b64  # type: ignore[union-attr]
    assert merged.startswith(INT8_PREFIX) and np.allclose(decode_vector(merged), CONTEXT, atol=2 / 127)


def test_a_context_of_another_size_or_not_base64_is_ignored() -> None:
    s = state()
    odd = apply_candidate(s, cand("1", "Ana likes tea.").model_copy(
        update={"context_b64": encode_vector(np.ones(3))}), vec(1, 0))
    assert s.memory(odd.memory_id).context_b64 is None  # type: ignore[union-attr]
    index = VectorIndex(2)
    broken = Memory(id="m", user_id="u", type="semantic", summary="x", context_b64="not base64!",
                    created_at="2024-05-01T10:00:00Z", updated_at="2024-05-01T10:00:00Z",
                    last_accessed="2024-05-01T10:00:00Z")  # type: ignore[arg-type]
    index.add(broken, vec(1, 0))
    assert index.user("u").query_similarities(vec(1, 0))[0] == pytest.approx(1.0, abs=1e-3)


def turn(turn_id: str, text: str, speaker: str = "Ana") -> Turn:
    return Turn(user_id="u", thread_id="t1", turn_id=turn_id, role="user", speaker=speaker,
                text=text, ts="2024-05-01T10:00:00+00:00")  # type: ignore[arg-type]


def test_the_context_is_the_turn_and_the_one_before_it_in_the_buffer() -> None:
    buffered = [turn(i, f"text {i}", s).model_dump(mode="json")
                for i, s in (("1", "Nate"), ("2", "Ana"), ("3", "Nate"))]
    assert context_of(turn("2", "text 2"), buffered) == ("Ana: text 2", "Nate: text 1")
    assert context_of(turn("1", "text 1", "Nate"), buffered) == ("Nate: text 1", None)
    # a turn no longer buffered is its own context, with nothing before it
    assert context_of(turn("9", "my secret is safe"), buffered) == ("Ana: my secret is safe", None)
    # a speaker's own turn before is not what this one answers
    own = [turn("1", "I adopted a dog named Luna.").model_dump(mode="json"),
           turn("2", "I work as a nurse.").model_dump(mode="json")]
    assert context_of(turn("2", "I work as a nurse."), own) == ("Ana: I work as a nurse.", None)


async def test_every_text_is_embedded_once_and_an_episode_gets_no_context() -> None:
    calls: list[list[str]] = []

    async def embed(texts: list[str]) -> np.ndarray:
        calls.append(texts)
        return np.eye(8, dtype=np.float32)[: len(texts)]

    facts = [FactTexts("fact a", "Ana: t2", "Nate: t1"), FactTexts("fact b", "Ana: t2", "Nate: t1"),
             FactTexts("episode")]
    vectors = await fact_vectors(facts, embed)
    assert len(calls) == 1 and sorted(calls[0]) == sorted({"fact a", "Ana: t2", "Nate: t1", "fact b", "episode"})
    (a, context_a), (_, context_b), (_, episode_context) = vectors
    assert context_a is not None and context_b is not None and episode_context is None
    assert np.allclose(context_a, context_b)
    assert a.shape == (8,)


async def test_a_turn_embedded_for_one_batch_is_not_embedded_again_for_the_next() -> None:
    """A steady chat: each batch one turn, whose context holds the turn before, embedded in the
    batch before. Summaries are kept too: dedup reads them."""
    calls: list[list[str]] = []
    basis = {}

    async def embed(texts: list[str]) -> np.ndarray:
        calls.append(texts)
        return np.stack([basis.setdefault(t, np.eye(16, dtype=np.float32)[len(basis)]) for t in texts])

    known = TextVectors()
    first = await fact_vectors([FactTexts("fact a", "Nate: t1", user_id="ana")], embed, known)
    second = await fact_vectors([FactTexts("fact b", "Ana: t2", "Nate: t1", "ana")], embed, known)
    assert calls == [["fact a", "Nate: t1"], ["fact b", "Ana: t2"]]
    fresh = await fact_vectors([FactTexts("fact b", "Ana: t2", "Nate: t1", "ana")], embed)
    assert np.array_equal(second[0][1], fresh[0][1]), "the same context as embedding afresh"
    assert np.array_equal(first[0][1], 0.3 * basis["Nate: t1"])
    assert known.get("ana", "fact a") is not None and len(known) == 4
    again = await fact_vectors([FactTexts("fact a", "Nate: t1", user_id="ana")], embed, known)
    assert len(calls) == 3 and np.array_equal(again[0][0], first[0][0]), "dedup's lookup: no call"


def test_text_vectors_keep_the_latest_and_a_purge_forgets_its_users() -> None:
    known = TextVectors(size=2)
    for n in range(3):
        known.put("ana", f"t{n}", np.full(4, n, dtype=np.float32))
    assert known.get("ana", "t0") is None and known.get("ana", "t1") is not None
    known.put("ana", "t3", np.zeros(4, dtype=np.float32))  # t1 was read last: t2 goes
    assert known.get("ana", "t2") is None and known.get("ana", "t1") is not None
    known.put("ana", "x" * (MEMO_MAX_CHARS + 1), np.zeros(4, dtype=np.float32))
    assert len(known) == 2, "a text longer than the memos keep is not kept"
    known.put("bo", "t1", np.ones(4, dtype=np.float32))  # ana's t3 goes
    assert known.get("bo", "t1") is not None and known.get("bo", "t3") is None, "kept by user"
    clear_memos()
    assert known.get("ana", "t1") is not None, "a purge of one memory: no summary of one is kept here"
    forget_texts("ana")
    assert known.get("ana", "t1") is None and known.get("bo", "t1") is not None, "the purged user's only"
    forget_texts()
    assert len(known) == 0


async def test_dedup_takes_the_summaries_and_leaves_the_turns_for_the_next_context() -> None:
    calls: list[list[str]] = []

    async def embed(texts: list[str]) -> np.ndarray:
        calls.append(texts)
        return np.eye(8, dtype=np.float32)[: len(texts)]

    known = TextVectors()
    fact = FactTexts("Ana has a dog", "Ana: I have a dog", "Nate: any pets?", "ana")
    made = await fact_vectors([fact], embed, known)  # ingest
    taken = await fact_vectors([fact], embed, known, take_summaries=True)  # dedup
    assert len(calls) == 1 and all(np.array_equal(a, b) for a, b in zip(made[0], taken[0]))
    assert known.get("ana", "Ana has a dog") is None and len(known) == 2, "the turns stay"
