"""Faust test_context tests of explicit commands: hot path from chat and `memory.commands`."""
from datetime import datetime, timezone

from tests.unit.agents.conftest import turn
from topics.candidates import Candidate, Fact
from topics.commands import Command

TS = datetime(2024, 5, 1, 11, tzinfo=timezone.utc)


def candidate(summary: str, turn_id: str) -> bytes:
    return Candidate(turn=turn("x", turn_id), fact=Fact(type="semantic", summary=summary),
                     fact_index=0, fact_count=1, confidence=0.9).model_dump_json().encode()


def command(**fields) -> bytes:
    return Command(user_id="u1", ts=TS, **fields).model_dump_json().encode()


async def seed(worker, *summaries: str) -> None:
    async with worker.faust.agents["dedup"].test_context() as agent:
        for i, summary in enumerate(summaries):
            await agent.put(candidate(summary, str(i)), key=b"u1")


def states(worker) -> dict[str, str]:
    return {m["summary"]: m["state"] for m in worker.sealed.memory.memories.values()}


async def test_forget_by_description_soft_deletes_the_matching_memory(worker, captured):
    await seed(worker, "Ana lives at 12 Rua Augusta in Lisbon.", "Ana plays the cello every Sunday.")
    async with worker.faust.agents["commands"].test_context() as agent:
        await agent.put(command(command_id="c1", kind="forget", query="where Ana lives"), key=b"u1")
    assert states(worker) == {"Ana lives at 12 Rua Augusta in Lisbon.": "soft_deleted",
                        "Ana plays the cello every Sunday.": "active"}
    assert [e.kind for e in captured.events][-1] == "soft_deleted"


async def test_a_replayed_command_applies_once_and_restore_undoes_it(worker, captured):
    await seed(worker, "Ana plays the cello every Sunday.")
    memory_id = next(iter(worker.sealed.memory.memories))
    async with worker.faust.agents["commands"].test_context() as agent:
        await agent.put(command(command_id="c1", kind="delete", memory_id=memory_id), key=b"u1")
        await agent.put(command(command_id="c1", kind="delete", memory_id=memory_id), key=b"u1")
        await agent.put(command(command_id="c2", kind="restore", memory_id=memory_id), key=b"u1")
        await agent.put(command(command_id="c3", kind="pin", memory_id=memory_id), key=b"u1")
    kinds = [e.kind for e in captured.events if e.kind != "created"]
    assert kinds == ["soft_deleted", "soft_deleted", "restored", "updated"]
    assert captured.events[-4] == captured.events[-3], "the replay re-sends the identical event"
    doc = worker.sealed.memory.memories[memory_id]
    assert doc["state"] == "active" and doc["pinned"] is True


async def test_commands_for_other_users_memories_and_garbage_go_to_the_dlq(worker, captured):
    await seed(worker, "Ana plays the cello every Sunday.")
    memory_id = next(iter(worker.sealed.memory.memories))
    async with worker.faust.agents["commands"].test_context() as agent:
        other = Command(user_id="mallory", ts=TS, command_id="x", kind="delete", memory_id=memory_id)
        await agent.put(other.model_dump_json().encode(), key=b"mallory")
        await agent.put(b'{"kind": "delete"}', key=b"u1")
    assert [d.reason for d in captured.dead] == ["inapplicable", "invalid_command"]
    assert states(worker) == {"Ana plays the cello every Sunday.": "active"}


async def test_chat_forget_goes_to_the_hot_path_and_is_not_stored_as_a_fact(worker, captured):
    async with worker.faust.agents["ingest"].test_context() as agent:
        await agent.put(turn("Please forget that I live in Lisbon.", "9").model_dump_json().encode(),
                        key=b"u1")
    assert not captured.candidates and not captured.commands
    [cmd] = captured.chat_commands  # on memory.candidates, behind the facts of earlier turns
    assert cmd.kind == "forget" and cmd.turn_id == "9" and "Lisbon" in cmd.query
    assert [(p.outcome, p.fact_count) for p in captured.progress] == [("command", 1)]


async def test_a_chat_command_applies_after_the_facts_queued_before_it(worker, captured):
    """The dedup stage takes facts and chat commands from one topic, in order: a full batch of
    queued facts ending in "don't remember this" deletes the last fact, and only it."""
    from topics.candidates import ChatCommand

    summaries = ["Ana plays the cello every Sunday.", "Ana works as a nurse in Lisbon.",
                 "Ana's dog Luna loves the beach.", "Ana is training for a half marathon.",
                 "Ana's brother Rui lives in Porto.", "Ana is saving for a house.",
                 "Ana reads science fiction novels.", "Ana earns 90k a year."]
    facts = [candidate(summary, str(i)) for i, summary in enumerate(summaries)]
    said = ChatCommand(command=Command(command_id="t1:8:dont_remember", kind="dont_remember",
                                       user_id="u1", ts=TS, thread_id="t1", turn_id="8"))
    async with worker.faust.agents["dedup"].test_context() as agent:
        for raw in [*facts, said.model_dump_json().encode()]:
            await agent.put(raw, key=b"u1", wait=False)
        async with agent.new_value_processed:
            await agent.new_value_processed.wait_for(lambda: agent.processed_offset >= 9)
    deleted = [s for s, state in states(worker).items() if state == "soft_deleted"]
    assert deleted == ["Ana earns 90k a year."]
    assert sum(state == "active" for state in states(worker).values()) == 7


async def test_dont_remember_this_deletes_what_the_previous_turn_stored(worker, captured):
    await seed(worker, "Ana earns 90k a year.")
    async with worker.faust.agents["commands"].test_context() as agent:
        await agent.put(command(command_id="t1:1:dont", kind="dont_remember", thread_id="t1",
                                turn_id="1"), key=b"u1")
    assert states(worker) == {"Ana earns 90k a year.": "soft_deleted"}
    assert captured.progress[-1].stage == "commands" and captured.progress[-1].outcome == "applied"


async def test_blocked_topics_are_honoured(worker, captured):
    async with worker.faust.agents["commands"].test_context() as agent:
        await agent.put(command(command_id="b1", kind="block_topic", topic="cello"), key=b"u1")
    async with worker.faust.agents["ingest"].test_context() as agent:
        await agent.put(turn("I started cello lessons with a great teacher.", "5").model_dump_json()
                        .encode(), key=b"u1")
        await agent.put(turn("I adopted a dog named Luna last year.", "6").model_dump_json()
                        .encode(), key=b"u1")
    assert [c.turn.turn_id for c in captured.candidates] == ["6"]
