"""The complete client (issue 50 item 1) against the embedded broker and a worker over TCP: `add`
takes OpenAI and LangChain messages and returns the memories they made once applied
(read-your-writes, through `memory.progress`), and every registry call — list, get, search,
update, pin, history, export, delete, forget, purge — does what it says, typed, with named
errors; the `memstream memories` commands do the same from a shell."""
from __future__ import annotations

import asyncio
import json
import re
import os
from datetime import datetime, timezone

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from streams.client import (
    ApplyTimeout,
    AsyncMemstreamClient,
    MemstreamClient,
    NotFound,
    PermissionDenied,
    Rejected,
    TurnResult,
)
from tests.integration.conftest import ADMIN_KEY, SCOPED_KEY, make_turn, unique_user
from tests.integration.test_cli import memstream

pytestmark = pytest.mark.integration
TS = datetime(2024, 5, 1, 10, tzinfo=timezone.utc)
"""The session worker's time line (`make_turn`): turns dated now would age other tests' memories."""
GUARD_S = 120
"""A guard against a hang, never a measure."""


def test_add_returns_what_it_made_and_every_registry_call_works(worker):
    user = unique_user("dana")

    async def scenario() -> None:
        async with AsyncMemstreamClient(worker.broker_url, worker.api_url, ADMIN_KEY,
                                        apply_timeout=GUARD_S) as client:
            added = await client.add([
                {"role": "user", "content": "I'm training for the Boston marathon in April."},
                {"role": "assistant", "content": "Great goal! How is the training going?"},
                HumanMessage(content=[{"type": "text", "text": "My dog Rex is a beagle."}]),
                AIMessage(content="", tool_calls=[]),  # no text: no turn
            ], user_id=user, thread_id="t1", speaker="Dana", ts=TS)
            assert [t.turn.role.value for t in added.turns] == ["user", "assistant", "user"]
            assert all(t.progress for t in added.turns), "each turn waited until applied"
            summaries = sorted(m.summary for m in added.memories)
            assert any("marathon" in s for s in summaries) and any("Rex" in s for s in summaries)
            marathon = next(m for m in added.memories if "marathon" in m.summary)
            assert marathon.user_id == user and marathon.source_turn_ids[0].startswith("t1:")

            # read-your-writes: no wait between the add and the reads
            page = await client.list(user, state="active")
            assert {m.id for m in added.memories} <= {m.id for m in page.items}
            assert page.total == len(page.items) and page.next_offset is None
            first = await client.memories(user, limit=1)
            assert len(first.items) == 1 and first.next_offset == 1
            assert (await client.memories(user, text="beagle")).items[0].summary.count("Rex") == 1
            assert await client.get(user, marathon.id) == marathon
            assert await client.get(user, "no-such-memory") is None

            found = await client.search(user, "What is Dana training for?")
            assert found[0].id == marathon.id

            edited = await client.update(user, marathon.id, "Dana is training for the Boston marathon in May.")
            assert edited.status == "applied"
            assert "May" in (await client.get(user, marathon.id)).summary
            await client.pin(user, marathon.id)
            assert (await client.get(user, marathon.id)).pinned is True
            verbs = [e.verb for e in await client.history(user, marathon.id)]
            assert verbs[0] == "ADD" and "UPDATE" in verbs

            exported = await client.export(user)
            assert {m.id for m in added.memories} <= {m.id for m in exported.memories}

            with pytest.raises(Rejected):  # the write policy refuses a secret in an edit
                await client.update(user, marathon.id, "Dana's password is hunter2-Secret!")
            with pytest.raises(NotFound):
                await client.delete(user, "no-such-memory")

            await client.delete(user, marathon.id)
            assert (await client.get(user, marathon.id)).state == "soft_deleted"
            await client.restore(user, marathon.id)
            forgotten = await client.forget(user, "Dana's dog")
            assert [c.kind for c in forgotten.commands] == ["delete"]
            assert (await client.memories(user, text="beagle")).items[0].state == "soft_deleted"
            everything = await client.forget(user)
            assert everything.status == "applied"
            assert (await client.memories(user, state="active")).total == 0

            await client.purge_user(user)
            assert (await client.memories(user)).total == 0

    asyncio.run(asyncio.wait_for(scenario(), GUARD_S * 3))


def test_blocking_client_send_turn_waits_and_errors_are_named(worker):
    user = unique_user("sync")
    with MemstreamClient(worker.broker_url, worker.api_url, ADMIN_KEY, apply_timeout=GUARD_S) as client:
        result = client.send_turn(make_turn(user, "1", "I adopted a dog named Luna last year."), wait=True)
        assert isinstance(result, TurnResult) and result.outcomes == ["created"]
        assert [m.summary for m in result.memories] and "Luna" in result.memories[0].summary
        assert client.get(user, result.memories[0].id) == result.memories[0]

        again = client.send_turn(make_turn(user, "1", "I adopted a dog named Luna last year."), wait=True)
        assert again.memories[0].id == result.memories[0].id, "the same turn applies once"

        with pytest.raises(ApplyTimeout) as waited:  # nothing can be applied in no time
            client.send_turn(make_turn(user, "2", "My sister Mia lives in Lisbon."), wait=True, timeout=0)
        assert waited.value.turns == [(user, "t1", "2")]

    with MemstreamClient(worker.broker_url, worker.api_url, SCOPED_KEY) as scoped:
        with pytest.raises(PermissionDenied):  # the key acts for one user only
            scoped.memories(user)


def test_memories_commands_list_get_edit_history_delete_export(worker, tmp_path):
    user = unique_user("cli")
    with MemstreamClient(worker.broker_url, worker.api_url, ADMIN_KEY, apply_timeout=GUARD_S) as client:
        memory = client.send_turn(make_turn(user, "1", "I work as a nurse in Porto."), wait=True).memories[0]
    env = dict(os.environ, KAFKA_BROKER_URL=worker.broker_url, MEMSTREAM_API_KEY=ADMIN_KEY)
    api = ("--api", worker.api_url)

    def run(*args: str) -> str:
        done = memstream("memories", *args, "--user", user, *api, env=env)
        assert done.returncode == 0, done.stderr
        return done.stdout

    listed = json.loads(run("list", "--json"))
    assert listed["total"] == 1 and listed["items"][0]["id"] == memory.id
    assert json.loads(run("get", memory.id, "--json"))["summary"] == memory.summary
    run("edit", memory.id, "Ana works as a nurse in Braga.")
    assert "Braga" in json.loads(run("get", memory.id, "--json"))["summary"]
    assert [e["verb"] for e in json.loads(run("history", memory.id, "--json"))][-1] == "UPDATE"
    run("delete", memory.id)
    run("export", "--out", str(tmp_path / "export.json"))
    exported = json.loads((tmp_path / "export.json").read_text())
    assert [m["state"] for m in exported["memories"]] == ["soft_deleted"]

    missing = memstream("memories", "get", "nope", "--user", user, *api, env=env)
    assert missing.returncode == 1 and "no such memory" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_query_lists_items_by_the_score_it_shows(worker):
    """The issue's CLI listing (0.311, 0.139, 0.170 …: ordered by the ranking formula, showing
    another number): the text output is in score order, and `--json` carries the score alone
    unless `--explain` asks for the figures behind it."""
    user = unique_user("order")
    said = ["I'm training for the Boston marathon in April.", "I run 40 km a week before work.",
            "My dog Rex is a beagle.", "My running shoes are Brooks Ghost 15.",
            "I work as a nurse at the city hospital."]
    with MemstreamClient(worker.broker_url, worker.api_url, ADMIN_KEY, apply_timeout=GUARD_S) as client:
        results = client.send_turns([make_turn(user, str(n), text) for n, text in enumerate(said)], wait=True)
        rex = next(m for r in results for m in r.memories if "Rex" in m.summary)
        client.pin(user, rex.id)  # the ranking lifts a pinned memory; its score says how well it answers
    env = dict(os.environ, KAFKA_BROKER_URL=worker.broker_url, MEMSTREAM_API_KEY=ADMIN_KEY)
    ask = ("query", "--user", user, "--api", worker.api_url, "--top-k", "5", "What is Ana training for?")

    shown = memstream(*ask, env=env)
    assert shown.returncode == 0, shown.stderr
    scores = [float(m.group(1)) for m in re.finditer(r"^(\d\.\d{3}) \[", shown.stderr, re.M)]
    assert len(scores) >= 3 and scores == sorted(scores, reverse=True), shown.stderr

    plain = json.loads(memstream(*ask, "--json", env=env).stdout)
    assert all("explain" not in item and "similarity" not in item for item in plain)
    explained = json.loads(memstream(*ask, "--json", "--explain", env=env).stdout)
    assert [i["id"] for i in explained] == [i["id"] for i in plain]
    assert all(set(i["explain"]) == {"similarity", "relevance", "rank_score"} for i in explained)
