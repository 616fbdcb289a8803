"""Ingest takes turns in batches: each turn is decided in its own record's scope, the batch's
candidates are embedded while its next turns are decided (each text once), and a bad record in
the middle is dead-lettered while the others go on, in turn order."""
from __future__ import annotations

import asyncio
from contextlib import contextmanager
from typing import Iterator

from streams.settings import Settings
from streams.app.inprocess import InProcessPipeline
from streams.pipeline.records import Record
from topics import names
from topics.candidates import Candidate, candidate_items
from streams.privacy.payloads import open_record
from tests.unit.app.test_inprocess import turn


def record(offset: int, value: bytes) -> Record:
    return Record(names.CHAT_TURNS, 0, offset, b"ana", value, None)


def turn_record(offset: int, text: str) -> Record:
    return record(offset, turn(str(offset), text).model_dump_json().encode())


async def test_a_batch_embeds_each_text_once_and_is_sent_in_turn_order(tmp_path, minilm_embedder):
    pipeline = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), minilm_embedder)
    stage = pipeline.ingest_stage
    calls: list[list[str]] = []
    real = stage.embed

    async def embed(texts):  # type: ignore[no-untyped-def]
        calls.append(list(texts))
        return await real(texts)

    scopes: list[int] = []

    @contextmanager
    def scope(r: Record) -> Iterator[None]:
        scopes.append(r.offset)
        yield

    stage.embed, stage.record_scope = embed, scope
    records = [turn_record(1, "I adopted a dog named Luna last year."),
               record(2, b"{not json"),
               turn_record(3, "I work as a nurse at the city hospital.")]

    emitted = await stage.handle_batch(records)

    assert emitted[1] == 0 and emitted[0] >= 1 and emitted[2] >= 1
    # each summary, and each turn its facts' context vectors are made of, embedded once over
    # the batch's model calls (one or two: the first starts as soon as turn 1 is decided)
    embedded = [text for call in calls for text in call]
    assert len(embedded) == len(set(embedded)) == emitted[0] + emitted[2] + 2
    assert {"Ana: I adopted a dog named Luna last year.",
            "Ana: I work as a nurse at the city hospital."} <= set(embedded)
    # every record is decided, and its records sent, in its own scope
    assert scopes == [1, 2, 3, 1, 3]
    [record_sent] = pipeline.topics.sent[names.MEMORY_CANDIDATES]  # one user: one record
    sent = candidate_items(open_record(pipeline.sealed.sealer, record_sent.value or b""))
    assert [c.turn.turn_id for c in sent] == ["1"] * emitted[0] + ["3"] * emitted[2]
    assert all(c.vector_b64 and c.context_b64 for c in sent), "each carries its vectors"
    assert len(pipeline.topics.sent[names.CHAT_TURNS_DLQ]) == 1


async def test_the_model_embeds_a_turn_while_the_next_is_decided(tmp_path, minilm_embedder):
    """Turn 1's candidates go to the model as soon as turn 1 is decided; turn 2, decided while
    that call runs, goes in the next call, which does not embed turn 1's text again although
    it is turn 2's previous turn."""
    pipeline = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), minilm_embedder)
    stage = pipeline.ingest_stage
    real = stage.embed
    calls: list[list[str]] = []
    turn_two_decided = asyncio.Event()

    async def embed(texts):  # type: ignore[no-untyped-def]
        calls.append(list(texts))
        await turn_two_decided.wait()  # the first call ends only once turn 2 is decided
        return await real(texts)

    @contextmanager
    def scope(r: Record) -> Iterator[None]:
        yield
        if r.offset == 2:
            turn_two_decided.set()

    nate = turn("1", "I just got back from a trip to Lisbon with my sister.").model_copy(
        update={"speaker": "Nate"})
    records = [record(1, nate.model_dump_json().encode()),
               turn_record(2, "I adopted a dog named Luna last year.")]
    stage.embed, stage.record_scope = embed, scope
    emitted = await stage.handle_batch(records)
    assert emitted[0] >= 1 and emitted[1] >= 1 and len(calls) == 2
    assert "Nate: I just got back from a trip to Lisbon with my sister." in calls[0]
    assert "Ana: I adopted a dog named Luna last year." in calls[1]
    assert not set(calls[0]) & set(calls[1]), "turn 1, turn 2's previous, is not embedded again"
    [record_sent] = pipeline.topics.sent[names.MEMORY_CANDIDATES]
    sent = candidate_items(open_record(pipeline.sealed.sealer, record_sent.value or b""))
    assert [c.turn.turn_id for c in sent] == ["1"] * emitted[0] + ["2"] * emitted[1]
    assert all(isinstance(c, Candidate) and c.vector_b64 and c.context_b64 for c in sent)


async def test_when_the_model_fails_the_batch_goes_without_vectors(tmp_path, minilm_embedder):
    pipeline = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), minilm_embedder)
    stage = pipeline.ingest_stage

    async def broken(texts):  # type: ignore[no-untyped-def]
        raise RuntimeError("model gone")

    stage.embed = broken
    emitted = await stage.handle_batch([turn_record(1, "I adopted a dog named Luna last year.")])
    assert emitted == [1]
    [sent] = pipeline.topics.sent[names.MEMORY_CANDIDATES]
    [candidate] = candidate_items(open_record(pipeline.sealed.sealer, sent.value or b""))
    assert isinstance(candidate, Candidate) and candidate.vector_b64 is None
    assert candidate.context_b64 is None


async def test_a_failed_model_call_leaves_only_its_own_turns_without_vectors(tmp_path, minilm_embedder):
    pipeline = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), minilm_embedder)
    stage = pipeline.ingest_stage
    real = stage.embed
    turn_two_decided = asyncio.Event()
    calls = 0

    async def first_fails(texts):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        if calls == 1:
            await turn_two_decided.wait()
            raise RuntimeError("model gone for a moment")
        return await real(texts)

    @contextmanager
    def scope(r: Record) -> Iterator[None]:
        yield
        if r.offset == 2:
            turn_two_decided.set()

    stage.embed, stage.record_scope = first_fails, scope
    emitted = await stage.handle_batch([turn_record(1, "I adopted a dog named Luna last year."),
                                        turn_record(2, "I work as a nurse at the city hospital.")])
    [record_sent] = pipeline.topics.sent[names.MEMORY_CANDIDATES]
    sent = candidate_items(open_record(pipeline.sealed.sealer, record_sent.value or b""))
    assert calls == 2 and emitted[0] >= 1 and emitted[1] >= 1
    assert all(c.vector_b64 is None for c in sent if c.turn.turn_id == "1")
    assert all(c.vector_b64 and c.context_b64 for c in sent if c.turn.turn_id == "2")
