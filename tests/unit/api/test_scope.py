"""The one allowlist filter (streams/api/scope.py) and the routes' use of it that needs no worker:
the delta header, related memories, command ids namespaced per principal."""
from __future__ import annotations

import json
from datetime import datetime, timezone

import numpy as np
import pytest

from streams.api.auth import AccessDenied, Principal
from streams.api.command_ids import command_id
from streams.api.query import delta_of, scoped_items
from streams.api.scope import BLOCKED_TOPICS_CATEGORY, Scope
from streams.memory.blocked_topics import set_topic_blocked
from streams.memory.commands import apply_command
from streams.memory.model import Memory
from streams.memory.state import MemoryState
from streams.memory.vector_index import UserIndex, VectorIndex
from streams.pipeline.tables import stage_tables
from streams.privacy.crypto import new_key
from streams.privacy.sealed import TABLE_OWNERS
from streams.providers.embedders import EmbedderProfile
from streams.read.categories import load_policy
from streams.read.query import execute, plan_query
from streams.read.token_budget import get_counter
from topics.commands import Command
from topics.query import QueryRequest
from tests import defaults

NOW = datetime(2024, 5, 1, 10, tzinfo=timezone.utc)
PLANNER = Principal("planner", "agent")  # Goals, Budget, Finance, Conversation_Summary, Procedural
ADMIN = Principal("ops", "admin")


def planner() -> Scope:
    return Scope.of(PLANNER, None)


def mem(memory_id: str, category: str, summary: str, **fields) -> Memory:
    return Memory(id=memory_id, user_id="ana", type="semantic", category=category, summary=summary,
                  created_at=NOW, updated_at=NOW, last_accessed=NOW, **fields)


def state() -> MemoryState:
    tables = stage_tables({name: {} for name in TABLE_OWNERS}, {}, new_key()).memory
    return MemoryState(tables, VectorIndex(2), defaults.dedup(EmbedderProfile("t", 2, 0.9, 0.8, 0.92, 0.85)))


def test_an_admin_sees_everything_an_agent_its_allowlist_and_no_agent_without_one():
    assert Scope.of(ADMIN, None).sees("Personal") and Scope.of(ADMIN, None).sees("")
    assert planner().sees("goals") and planner().sees("Goals")
    for category in ("Personal", "", None, "Other"):
        assert not planner().sees(category), category
    with pytest.raises(AccessDenied):
        Scope.of(Principal("nobody", "agent"), None)


def test_a_narrowed_scope_is_never_wider():
    assert planner().narrowed(["Goals", "Personal"]).categories == {"goals"}
    assert Scope.of(ADMIN, None).narrowed(["Personal"]).categories == {"personal"}


def test_events_are_judged_by_category_and_only_a_content_free_purge_is_seen_by_all():
    events = [{"kind": "created", "category": "Personal", "summary": "Ana has a dog."},
              {"kind": "updated", "category": "Goals", "summary": "Ana runs."},
              {"kind": "purged", "category": "", "summary": ""},
              {"kind": "purged", "category": "Personal", "summary": "Ana has a dog."}]
    assert planner().events(events) == events[1:3]
    assert planner().proposals([{"id": "p", "category": "Personal"}]) == []
    assert planner().blocked_topics(["divorce"]) == [] and not planner().sees_blocked_topics
    assert Scope.of(Principal("researcher", "agent"), None).blocked_topics(["divorce"]) == ["divorce"]


def test_blocked_topics_are_judged_by_the_category_their_changes_are_announced_under():
    event = set_topic_blocked(state(), Command(command_id="b", kind="block_topic", user_id="ana",
                                               ts=NOW, topic="divorce"), True)
    assert event.category == BLOCKED_TOPICS_CATEGORY
    assert not planner().sees_event(event.model_dump())


def test_the_delta_header_shows_only_changes_of_the_callers_categories():
    """Registry changes of every category share the thread "commands": the header of an agent
    allowed Goals shows none of the Personal changes (a soft-deleted summary included)."""
    s = state()
    for memory in (mem("p", "Personal", "Ana is allergic to peanuts."),
                   mem("g", "Goals", "Ana plans to run a marathon.")):
        s.store(memory, np.asarray([1.0, 0.0], dtype=np.float32))
        apply_command(s, Command(command_id=f"del-{memory.id}", kind="delete", user_id="ana",
                                ts=NOW, memory_id=memory.id), None)
    rev, since, header = delta_of(s, "ana", "commands", 0, planner())
    assert (rev, since) == (2, 0)
    assert "marathon" in header and "peanuts" not in header
    assert "peanuts" in delta_of(s, "ana", "commands", 0, Scope.of(ADMIN, None))[2]


def test_related_memories_of_another_category_are_left_out_of_a_full_answer():
    goal = mem("g", "Goals", "Ana wants to play the saxophone in a band.", relations={"p": 0.8})
    personal = mem("p", "Personal", "Ana plays the saxophone every Sunday.", relations={"g": 0.8})
    index = UserIndex(2)
    index.upsert(goal, np.asarray([1.0, 0.0], dtype=np.float32))
    index.upsert(personal, np.asarray([0.8, 0.6], dtype=np.float32))
    request = QueryRequest.model_validate_json(json.dumps(
        {"agent": "planner", "query": "saxophone", "return": "full"}))
    policy = load_policy()
    plan = plan_query(request, "ana", policy, defaults.limits(), NOW)
    response, _ = execute(index, np.asarray([1.0, 0.0], dtype=np.float32), plan, policy,
                          defaults.weights(), get_counter())
    [item] = response.items
    assert [r["id"] for r in item["related"]] == ["p"], "the link itself crosses categories"
    scope = planner().narrowed(plan.categories)
    [scoped] = scoped_items(response.items, scope)
    assert scoped["related"] == [] and "Sunday" not in json.dumps(scoped)


def test_command_ids_are_namespaced_per_principal():
    assert command_id(PLANNER, "k1") == command_id(Principal("planner", "agent"), "k1")
    assert command_id(PLANNER, "k1") != command_id(Principal("stylist", "agent"), "k1")
    assert command_id(PLANNER, "k1") != command_id(Principal("planner", "admin"), "k1")
    # a chat command's id is `thread:turn:kind`, and a thread id has no slash
    assert command_id(PLANNER, "t1:3:forget").startswith("api/")
    longest = command_id(Principal("a" * 200, "agent"), "k" * 150 + ":99999")
    Command(command_id=longest, kind="delete", user_id="ana", ts=NOW, memory_id="m")
