"""The in-process runner: the order `LocalTopics` delivers records in, and the worker's stages
run without Kafka (what `bench locomo --offline` measures)."""
from __future__ import annotations

from streams.settings import Settings
from streams.app.inprocess import Consumers, InProcessPipeline, LocalTopics
from streams.pipeline.records import Record
from topics import names
from topics.turns import Turn


class Log:
    """Consumers that only note what they were handed, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[bytes]]] = []

    def consumers(self) -> Consumers:
        async def turn(record: Record) -> None:
            self.calls.append(("turn", [record.value or b""]))

        async def candidates(records: list[Record]) -> None:
            self.calls.append(("candidates", [r.value or b"" for r in records]))

        async def command(record: Record) -> None:
            self.calls.append(("command", [record.value or b""]))

        return Consumers(turn, candidates, command)


async def queued(*records: tuple[str, bytes]) -> LocalTopics:
    topics = LocalTopics()
    for topic, value in records:
        await topics.send(topic, b"u1", value)
    return topics


async def test_candidates_go_in_full_batches_and_a_partial_one_waits_unless_flushed():
    topics = await queued(*[(names.MEMORY_CANDIDATES, b"c%d" % i) for i in range(5)])
    log = Log()
    await topics.deliver(log.consumers(), batch=2, flush=False)
    assert log.calls == [("candidates", [b"c0", b"c1"]), ("candidates", [b"c2", b"c3"])]
    assert topics.pending() == 1, "the partial batch waits for more"
    await topics.deliver(log.consumers(), batch=2)
    assert log.calls[-1] == ("candidates", [b"c4"]) and topics.pending() == 0


async def test_a_command_waits_for_the_candidates_sent_before_it():
    topics = await queued((names.MEMORY_CANDIDATES, b"c0"), (names.MEMORY_COMMANDS, b"forget"),
                          (names.CHAT_TURNS, b"t0"))
    log = Log()
    await topics.deliver(log.consumers(), batch=64, flush=False)
    assert [kind for kind, _ in log.calls] == ["turn", "candidates", "command"]


async def test_commands_first_overtakes_queued_candidates():
    topics = await queued((names.MEMORY_CANDIDATES, b"c0"), (names.MEMORY_COMMANDS, b"forget"))
    log = Log()
    await topics.deliver(log.consumers(), batch=64, commands_first=True)
    assert [kind for kind, _ in log.calls] == ["command", "candidates"]


async def test_every_record_sent_is_logged_by_topic_with_offsets():
    topics = await queued((names.MEMORY_EVENTS, b"e0"), (names.MEMORY_EVENTS, b"e1"))
    assert [(r.offset, r.value) for r in topics.sent[names.MEMORY_EVENTS]] == [(0, b"e0"), (1, b"e1")]
    assert topics.pending() == 0, "output topics are logged, not queued"


def turn(turn_id: str, text: str) -> Turn:
    return Turn(user_id="ana", thread_id="t1", turn_id=turn_id, role="user", speaker="Ana",
                text=text, ts="2024-05-01T10:00:00+00:00")  # type: ignore[arg-type]


async def test_the_stages_store_answer_and_apply_a_command_said_in_chat(tmp_path, minilm_embedder):
    pipeline = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), minilm_embedder)
    await pipeline.ingest([turn("1", "I adopted a dog named Luna last year."),
                           turn("2", "I love jazz music."),
                           turn("3", "Please forget that I love jazz.")])
    assert pipeline.outcomes()["created"] == 2
    states = {m.summary: m.state for m in pipeline.store.user_memories("ana")}
    assert [s for summary, s in states.items() if "jazz" in summary] == ["soft_deleted"]
    [hit, *_] = await pipeline.query("ana", "What pet does Ana have?", 3)
    assert "Luna" in hit.memory.summary
