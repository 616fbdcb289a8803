"""Ingest takes turns in batches: each turn is decided in its own record's scope, the whole
batch's candidates are embedded in one model call, and a bad record in the middle is
dead-lettered while the others go on, in turn order."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import orjson

from streams.settings import Settings
from streams.app.inprocess import InProcessPipeline
from streams.memory.tables import thread_key, turn_key
from streams.pipeline.records import Record
from topics import names
from topics.candidates import Candidate, candidate_items
from streams.privacy.payloads import open_record, seal_record
from tests.unit.app.test_inprocess import turn
from tests.unit.pipeline.test_carried_vectors import counted


def record(offset: int, value: bytes) -> Record:
    return Record(names.CHAT_TURNS, 0, offset, b"ana", value, None)


def turn_record(offset: int, text: str) -> Record:
    return record(offset, turn(str(offset), text).model_dump_json().encode())


async def test_a_batch_is_embedded_in_one_call_and_sent_in_turn_order(tmp_path, minilm_embedder):
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
    assert len(calls) == 1, "one model call for the whole batch"
    # each summary, and each turn its facts' context vectors are made of, embedded once (turn
    # 1 is the source turn of its facts and the previous turn of turn 3's)
    assert len(calls[0]) == len(set(calls[0])) == emitted[0] + emitted[2] + 2
    assert {"Ana: I adopted a dog named Luna last year.",
            "Ana: I work as a nurse at the city hospital."} <= set(calls[0])
    # every record is decided, and its records sent, in its own scope
    assert scopes == [1, 2, 3, 1, 3]
    [record_sent] = pipeline.topics.sent[names.MEMORY_CANDIDATES]  # one user: one record
    sent = candidate_items(open_record(pipeline.sealed.sealer, record_sent.value or b""))
    assert [c.turn.turn_id for c in sent] == ["1"] * emitted[0] + ["3"] * emitted[2]
    assert all(c.vector_b64 is None and c.context_b64 is None for c in sent), "texts, not vectors"
    assert [c.context_turn for c in sent] == (["Ana: I adopted a dog named Luna last year."] * emitted[0]
                                              + ["Ana: I work as a nurse at the city hospital."] * emitted[2])
    assert len(pipeline.topics.sent[names.CHAT_TURNS_DLQ]) == 1


async def test_dedup_finds_the_vectors_ingest_made_and_makes_the_same_as_it_would(tmp_path, minilm_embedder):
    """A candidate carries its texts; dedup of the same worker finds their vectors in the
    worker's `TextVectors` (no model call), and a worker without them (a rebalance, a restart)
    makes the same vectors, so the two store the same memory."""
    def memory_of(pipeline: InProcessPipeline) -> tuple[str | None, str | None]:
        [memory] = pipeline.store.user_memories("ana")
        index = pipeline.store.state().index.user("ana")
        return index.vector_b64(memory.id), index.context_b64(memory.id)

    async def dedup(pipeline: InProcessPipeline, items: object) -> list[list[str]]:
        calls = counted(pipeline)
        value = seal_record(pipeline.sealed.sealer, "ana", items)
        await pipeline.dedup_stage.handle_batch([Record(names.MEMORY_CANDIDATES, 0, 0, b"ana", value, None)])
        return calls

    first = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path / "a"), minilm_embedder)
    await first.ingest_stage.handle_batch([turn_record(1, "I adopted a dog named Luna last year."),
                                           turn_record(2, "Where do you work these days?")])
    [sent] = first.topics.sent[names.MEMORY_CANDIDATES]
    items = open_record(first.sealed.sealer, sent.value or b"")
    assert await dedup(first, items) == [], "every vector was in the worker's TextVectors"
    [candidate] = candidate_items(items)
    assert isinstance(candidate, Candidate) and candidate.context_turn is not None
    assert first.services.vectors.get("ana", candidate.fact.summary) is None, "dedup took it"
    assert first.services.vectors.get("ana", candidate.context_turn) is not None, "the turn stays"

    other = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path / "b"), minilm_embedder)
    other.services.vectors.clear()  # the same process's model: emptied, as in another worker
    calls = await dedup(other, items)
    assert len(calls) == 1 and "Ana: I adopted a dog named Luna last year." in calls[0]
    assert memory_of(other) == memory_of(first) and memory_of(first)[1] is not None


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
    assert candidate.context_turn == "Ana: I adopted a dog named Luna last year.", "dedup embeds it"


async def test_a_turns_record_names_the_turn_it_buffers_and_its_replay_buffers_it_again(
        tmp_path, minilm_embedder):
    """`turn_log` lists the buffer write a replay makes again without repeating the turn (the
    replay has it); a recovery that rolled the buffer back gets the turn back from the replay."""
    pipeline = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), minilm_embedder)
    stage, tables = pipeline.ingest_stage, pipeline.sealed.ingest
    text = "I adopted a dog named Luna last year, she is a border collie."
    await stage.handle_batch([turn_record(1, "Hi there, how are you?")])
    before = tables.buffers[thread_key("ana", "t1")]
    await stage.handle_batch([turn_record(2, text)])
    whole = tables.buffers[thread_key("ana", "t1")]
    assert whole["turns"][-1]["text"] == text

    logged = tables.turn_log[turn_key("ana", "t1", "2")]
    assert text not in orjson.dumps(logged).decode(), "the turn is named, not repeated"
    tables.buffers[thread_key("ana", "t1")] = before  # a recovery rolls the buffer back
    await stage.handle_batch([turn_record(2, text)])
    assert tables.buffers[thread_key("ana", "t1")] == whole
