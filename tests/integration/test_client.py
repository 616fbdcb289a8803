"""memstream's client (streams/client/) against the embedded broker and a worker over TCP, on
asyncio and blocking: turns it produces land on the user's partition and become memories, a
query returns them typed, watch receives their events, proactivity candidates are consumed;
errors are named; the example chat backend runs."""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from streams.client import (
    AsyncMemstreamClient,
    AuthenticationError,
    BulletItem,
    FullItem,
    InvalidRequest,
    MemoryEvent,
    MemstreamClient,
    PermissionDenied,
    ProactivityCandidate,
    QueryResult,
)
from streams.privacy.placement import partition_for
from tests.integration.conftest import (
    own_stack,
    ADMIN_KEY,
    PARTITIONS,
    SCOPED_KEY,
    make_turn,
    unique_user,
    wait_processed,
)

pytestmark = pytest.mark.integration


# A broker and worker of this module's own: its turns are dated now (the example backend and the client's own), which would move the session
# worker's event-time watermarks and age other tests' memories (`a_broker`).
broker, worker = own_stack()
ROOT = Path(__file__).parents[2]
EXAMPLE = ROOT / "examples" / "chat_backend.py"
GUARD_S = 240
"""A guard against a hang, never a measure."""
PET = "I adopted a dog named Luna last year."
SAD = "I lost my job at the bakery today and I feel awful about it."  # a proactivity candidate


def test_async_client_turns_become_memories_events_queries_and_candidates(worker):
    user = unique_user("client-async")
    turns = [make_turn(user, "1", PET), make_turn(user, "2", SAD)]

    async def scenario() -> None:
        async with AsyncMemstreamClient(worker.broker_url, worker.api_url, ADMIN_KEY) as client:
            # replay: the events the worker keeps, then live ones — none falls between.
            events = client.watch(user, replay=True)
            candidates = client.proactivity(user_id=user, group_id=f"it-{uuid.uuid4().hex[:8]}",
                                            from_beginning=True)
            deliveries = await client.send_turns(turns)
            assert {d.partition for d in deliveries} == {partition_for(user, PARTITIONS)}
            assert deliveries[0].offset < deliveries[1].offset and deliveries[0].topic == "chat.turns"

            async def first_created() -> MemoryEvent:
                async for event in events:
                    if isinstance(event, MemoryEvent) and event.kind == "created":
                        return event
                raise AssertionError("the stream ended")

            created = await asyncio.wait_for(first_created(), GUARD_S)
            assert created.user_id == user and created.summary
            candidate = await asyncio.wait_for(candidates.__anext__(), GUARD_S)
            assert isinstance(candidate, ProactivityCandidate) and candidate.user_id == user
            assert candidate.source_turn_ids == ["t1:2"]

            await wait_processed(worker.broker_url, turns)
            answer = await client.query(user, "What pet does Ana have?", mode="full")
            assert isinstance(answer, QueryResult) and answer.user_id == user
            assert all(isinstance(item, FullItem) for item in answer.items)
            assert any("Luna" in item.summary and item.source_turn_ids == ["t1:1"]
                       for item in answer.items)

    asyncio.run(scenario())


def test_blocking_client_turns_become_memories_and_errors_are_named(worker):
    user = unique_user("client-sync")
    turns = [make_turn(user, "1", PET)]
    with MemstreamClient(worker.broker_url, worker.api_url, ADMIN_KEY) as client:
        [delivery] = client.send_turns(turns)
        assert delivery.partition == partition_for(user, PARTITIONS)
        asyncio.run(wait_processed(worker.broker_url, turns))

        answer = client.query(user, "What pet does Ana have?", top_k=3)
        assert answer.items and all(isinstance(item, BulletItem) for item in answer.items)
        assert "Luna" in answer.context

        event = next(e for e in client.watch(user, replay=True) if isinstance(e, MemoryEvent))
        assert event.user_id == user

        with pytest.raises(InvalidRequest, match="top_k"):
            client.query(user, "pets", top_k=0)
    with MemstreamClient(api_url=worker.api_url, api_key=SCOPED_KEY) as scoped:
        with pytest.raises(PermissionDenied):
            scoped.query(user, "pets")
    with MemstreamClient(api_url=worker.api_url, api_key="msk_not-a-key") as stranger:
        with pytest.raises(AuthenticationError):
            stranger.query(user, "pets")


def test_the_example_chat_backend_runs_against_a_worker(worker):
    """examples/chat_backend.py, as against `./dev run`: its memory context is empty at first,
    and names the pet once the first message became a memory."""
    user = unique_user("example")
    env = dict(os.environ, KAFKA_BROKER_URL=worker.broker_url, WEB_HOST="127.0.0.1",
               WEB_PORT=str(worker.port), MEMSTREAM_API_KEY=ADMIN_KEY)

    def chat(message: str) -> str:
        done = subprocess.run([sys.executable, str(EXAMPLE), user, message], env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=GUARD_S)
        assert done.returncode == 0, done.stderr
        return done.stdout

    async def remembered() -> None:
        async with AsyncMemstreamClient(api_url=worker.api_url, api_key=ADMIN_KEY) as client:
            async for event in client.watch(user, replay=True):
                if isinstance(event, MemoryEvent) and event.kind == "created" and "Luna" in event.summary:
                    return

    assert "[memory] (nothing yet)" in chat(PET)
    asyncio.run(asyncio.wait_for(remembered(), GUARD_S))
    assert "Luna" in chat("What pet do I have?")
