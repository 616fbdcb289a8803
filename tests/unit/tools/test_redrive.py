"""Re-driving dead letters (streams/tools/redrive.py): each replayable letter's record goes back
to its input topic as it came (key, bytes) with a header naming the letter, in the record's
original order; letters of one record send it once; the rest are skipped, saying why; a dry
run sends nothing."""
from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable

from streams.tools.dead_letters import Inspected, Verdict, Where, decode
from streams.tools import dead_letters as dl
from streams.tools.redrive import REPLAYED_FROM, plan, replay, tally
from topics import names
from topics.dlq import DeadLetter


class Sent:
    """A `Sender` that keeps what it was given."""

    def __init__(self) -> None:
        self.records: list[tuple[str, bytes | None, bytes, list[tuple[str, bytes]]]] = []

    async def send(self, topic: str, key: bytes | None, value: bytes,
                   headers: list[tuple[str, bytes]]) -> Awaitable[Where]:
        self.records.append((topic, key, value, headers))
        done: asyncio.Future[Where] = asyncio.get_running_loop().create_future()
        done.set_result(Where(topic, 0, 100 + len(self.records)))
        return done


def turn(turn_id: str) -> bytes:
    return json.dumps({"user_id": "ana", "turn_id": turn_id}).encode()


def item(dlq_offset: int, source_offset: int, raw: bytes, code: str = dl.REPLAYABLE,
         dlq: str = names.CHAT_TURNS_DLQ) -> Inspected:
    letter = DeadLetter(stage="ingest", reason="internal_error", error="RuntimeError",
                        topic=dl.INPUT_OF[dlq], partition=2, offset=source_offset, key="ana",
                        raw_size=len(raw))
    stored = decode(Where(dlq, 2, dlq_offset), 1_714_557_600_000, b"ana",
                    letter.model_dump_json().encode())
    return Inspected(stored, Verdict(code, "" if code == dl.REPLAYABLE else "why"),
                     raw if code == dl.REPLAYABLE else None)


async def test_each_record_goes_back_to_its_input_as_it_came_with_the_letter_named():
    sent = Sent()
    items = [item(0, 10, turn("1")), item(1, 3, b"\x00raw", dlq=names.MEMORY_COMMANDS_DLQ)]
    outcomes = await replay(items, sent)
    assert sent.records == [
        (names.CHAT_TURNS, b"ana", turn("1"), [(REPLAYED_FROM, b"chat.turns.dlq/2/0")]),
        (names.MEMORY_COMMANDS, b"ana", b"\x00raw", [(REPLAYED_FROM, b"memory.commands.dlq/2/1")]),
    ]
    assert [o.action for o in outcomes] == ["replayed", "replayed"]
    assert [str(o.sent_to) for o in outcomes] == ["chat.turns/0/101", "memory.commands/0/102"]
    assert tally(outcomes) == {"replayed": 2, "would_replay": 0, "duplicate": 0, "skipped": {}}


async def test_records_go_back_in_the_order_they_had_on_their_input():
    """A user's turns are said again in the order they were first said, whatever the letters'."""
    sent = Sent()
    await replay([item(0, 30, turn("c")), item(1, 10, turn("a")), item(2, 20, turn("b"))], sent)
    assert [value for _, _, value, _ in sent.records] == [turn("a"), turn("b"), turn("c")]


async def test_letters_of_one_record_send_it_once():
    """A replayed record that failed again has a second letter: a later run sends it once."""
    sent = Sent()
    items = [item(0, 10, turn("1")), item(1, 55, turn("1")), item(2, 11, turn("2"))]
    outcomes = await replay(items, sent)
    assert [value for _, _, value, _ in sent.records] == [turn("1"), turn("2")]
    [dup] = [o for o in outcomes if o.action == "duplicate"]
    assert dup.item.stored.where.offset == 1 and str(dup.duplicate_of) == "chat.turns.dlq/2/0"
    assert tally(outcomes)["duplicate"] == 1


async def test_letters_that_cannot_be_replayed_are_skipped_saying_why_and_a_dry_run_sends_nothing():
    items = [item(0, 1, turn("1")), item(1, 2, b"", code=dl.TRUNCATED),
             item(2, 3, b"", code=dl.UNREADABLE), item(3, 4, b"", code=dl.UNREADABLE)]
    sent = Sent()
    outcomes = await replay(items, sent)
    assert len(sent.records) == 1
    assert tally(outcomes) == {"replayed": 1, "would_replay": 0, "duplicate": 0,
                               "skipped": {"truncated": 1, "unreadable": 2}}
    dry = await replay(items, None)
    assert tally(dry)["would_replay"] == 1 and all(o.sent_to is None for o in dry)
    described = [o.described() for o in dry]
    assert described[1] | {"action": "skipped", "why": "truncated", "why_text": "why"} == described[1]
    assert "ana" in json.dumps(described) and '"turn_id"' not in json.dumps(described), "no content"


def test_the_plan_marks_only_replayable_duplicates():
    items = [item(0, 1, turn("1")), item(1, 1, b"", code=dl.WITHHELD), item(2, 1, b"", code=dl.WITHHELD)]
    assert [dup for _, dup in plan(items)] == [None, None, None]
