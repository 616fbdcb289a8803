"""`bench locomo --workers 2` ends in the same memories as `--workers 1` (issue 22 item 4).

A slice of a LoCoMo conversation, replayed under four user ids spread over the four partitions
(`bench_scale.spread_copies`: with two workers, two users each), is drained by the bench's own
fresh stacks — a broker and one worker, then a broker and two workers in one consumer group —
and every user's active memories (type, summary, provenance) are compared. The bench's scale-out
figures are checked on the way: each worker held its half of the partitions and processed its
users' turns, its model's CPU was counted, and the broker's records were accounted per topic.

The lifecycle is off in both runs. It runs on a per-partition event-time watermark, but its
passes are triggered by timers and by the records a partition happens to hold when they fire,
so how far a user's lifecycle has got when the drain ends depends on how fast each partition
was drained, which is what the number of workers changes: its states may legitimately differ.
The write path (trigger, extraction, dedup per user, in each user's order) has no such
dependence, and that is what must be identical.
"""
from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from benchmarks.bench import _statuses, ingest
from benchmarks.bench_scale import (
    MODEL_CPU_METRIC,
    TURNS_METRIC,
    broker_end_offsets,
    delta,
    metric_total,
    partition_of,
    per_turn,
    read_written,
    settled_end_offsets,
    spread_copies,
    written_ranges,
)
from streams.tools.locomo import LocomoConversation, load_conversation
from streams.tools.client import ApiClient
from streams.tools.stack import Stack, start_stack, turn_partitions
from topics.names import CHAT_TURNS, MEMORY_PROGRESS

LOCOMO = Path(__file__).resolve().parents[3] / "shared" / "datasets" / "locomo"
pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not LOCOMO.exists(), reason="LoCoMo data not available")]

PARTITIONS = 4
USERS = 4
SLICE = 24  # the first turns of conv-30's first session


def the_users() -> list[LocomoConversation]:
    conv = load_conversation(LOCOMO / "conv-30.json")
    conv.turns[:] = conv.turns[:SLICE]
    # The workers' partitions in turn, as the bench orders them: [0, 1, 2, 3] spreads the users
    # one per partition either way.
    return [c for c, _ in spread_copies([conv], USERS, PARTITIONS, "scale-", list(range(PARTITIONS)))]


async def memories_of(stack: Stack, users: list[str]) -> dict[str, list[tuple]]:
    out = {}
    async with ApiClient(stack.api_url, api_key=stack.api_key) as client:
        for user in users:
            out[user] = sorted((m["type"], m["summary"], tuple(sorted(m["source_turn_ids"])))
                               for m in await client.memories(user) if m["state"] == "active")
    return out


def drain(workers: int, conversations: list[LocomoConversation]) -> tuple[dict, dict]:
    """Run the slice through a fresh stack of `workers`; the memories per user, and the
    bench's figures: per worker (partitions, turns, model CPU) and the Kafka records."""
    turns = [t for c in conversations for t in c.turns]
    stack = start_stack(PARTITIONS, lifecycle=False, workers=workers)
    try:
        before = asyncio.run(_statuses(stack))
        offsets = asyncio.run(broker_end_offsets(stack.broker_url))
        result = asyncio.run(ingest(stack.broker_url, turns, stack.one_record_batches, 120.0,
                                    lambda: None))
        assert len(result.done_at) == len(turns)
        after = asyncio.run(_statuses(stack))
        written = asyncio.run(read_written(stack.broker_url, written_ranges(
            offsets, asyncio.run(settled_end_offsets(stack.broker_url)))))
        memories = asyncio.run(memories_of(stack, [c.user_id for c in conversations]))
    finally:
        stack.close()
    figures = {
        "partitions": [turn_partitions(h, CHAT_TURNS) for h, _ in before],
        "turns": [delta(metric_total(b, TURNS_METRIC), metric_total(a, TURNS_METRIC))
                  for (_, b), (_, a) in zip(before, after)],
        "model_cpu": [delta(metric_total(b, MODEL_CPU_METRIC), metric_total(a, MODEL_CPU_METRIC))
                      for (_, b), (_, a) in zip(before, after)],
        "kafka": per_turn(written, len(turns)),
    }
    return memories, figures


def test_two_workers_end_in_the_same_memories_as_one():
    conversations = the_users()
    assert sorted(partition_of(c.user_id, PARTITIONS) for c in conversations) == [0, 1, 2, 3]
    per_user = len(conversations[0].turns)

    one, one_figures = drain(1, conversations)
    two, two_figures = drain(2, conversations)

    assert all(one.values()), "the slice made memories for every user"
    assert two == one

    assert one_figures["partitions"] == [[0, 1, 2, 3]]
    held = two_figures["partitions"]
    assert sorted(p for parts in held for p in parts) == [0, 1, 2, 3] and all(held)
    # Each worker processed the turns of the users on its partitions, and only those.
    users_on = [sum(partition_of(c.user_id, PARTITIONS) in parts for c in conversations)
                for parts in held]
    assert two_figures["turns"] == [n * per_user for n in users_on]
    assert one_figures["turns"] == [USERS * per_user]
    assert all(cpu > 0 for cpu in one_figures["model_cpu"] + two_figures["model_cpu"])
    for figures in (one_figures, two_figures):
        msgs = figures["kafka"]["kafka_msgs_per_turn"]["by_topic"]
        assert msgs[CHAT_TURNS] == 1.0  # each turn one record, counted once
        assert msgs[MEMORY_PROGRESS] > 0  # one record per user per stage batch
        assert any(t.endswith("-changelog") for t in msgs)  # the tables' writes are counted
