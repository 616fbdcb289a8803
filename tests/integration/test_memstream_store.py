"""`MemstreamStore` (LangGraph's `BaseStore` over memstream's client) against a running worker.

LangGraph ships no store conformance suite; these are the expectations of its own store tests
(langgraph libs/checkpoint/tests/test_store.py, checkpoint-sqlite's test_store.py) where
memstream can keep them: the key put is the key got, a batch of mixed ops answers in op order,
sync and async agree, search honours limit/offset/filter and namespace prefixes,
list_namespaces answers the namespaces that hold items (prefix, suffix, wildcards, max_depth,
limit/offset), a delete removes the item, an expired item is gone; and memstream's own: the
agent's allowlist is never widened, a re-put keeps memstream's words.
"""
from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone

import pytest
from langgraph.store.base import GetOp, Item, ListNamespacesOp, PutOp, SearchItem, SearchOp

from streams.client.langgraph_store import (
    MemstreamStore,
    NotStoredError,
    OutOfScopeError,
    StoreApiError,
    StoreError,
    UnsupportedNamespaceError,
)
from streams.client.langgraph_mapping import UnsupportedFilterError
from tests.integration.conftest import (
    own_stack,
    ADMIN_KEY,
    call,
    PLANNER_KEY,
    REQUEST_GUARD_S,
    SCOPED_KEY,
    SCOPED_USER,
    unique_user,
)

pytestmark = pytest.mark.integration


# A broker and worker of this module's own: its turns are dated now (a put remembers through a chat turn dated now), which would move the session
# worker's event-time watermarks and age other tests' memories (`a_broker`).
broker, worker = own_stack()

GOAL = "I want to run a marathon in October."  # Goals
BUDGET = "My monthly grocery budget is 400 euros."  # Budget
PET = "I adopted a dog named Luna."  # Personal: not in the planner's allowlist


def store_for(worker, broker, key: str = ADMIN_KEY, agent: str = "supervisor", **options) -> MemstreamStore:
    return MemstreamStore(worker.api_url, key, agent, broker=broker.url, timeout_s=REQUEST_GUARD_S,
                          **options)


@pytest.fixture(autouse=True)
def _closed_stores(monkeypatch):
    """Every store a test makes is closed after it (its client's producer and thread)."""
    made: list[MemstreamStore] = []
    init = MemstreamStore.__init__

    def tracked(self, *args, **kwargs):
        init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(MemstreamStore, "__init__", tracked)
    yield
    for store in made:
        store.close()


@pytest.fixture(scope="module")
def three(worker, broker):
    """A user with three memories put through the store: (user, {put key: memory id})."""
    user = unique_user("store")
    store = store_for(worker, broker)
    ids = {}
    for key, text in (("goal", GOAL), ("budget", BUDGET), ("pet", PET)):
        store.put(("memories", user), key, {"text": text})
        ids[key] = store.get(("memories", user), key).key
    store.close()
    return user, ids


def test_put_get_search_edit_delete(worker, broker):
    store = store_for(worker, broker)
    user = unique_user("store")
    ns = ("memories", user)
    assert store.get(ns, "goal") is None

    store.put(ns, "goal", {"text": GOAL})
    item = store.get(ns, "goal")  # read-your-writes: the put waited for the turn to be stored
    assert isinstance(item, Item) and item.namespace == ns and item.key == "goal"
    assert "marathon" in item.value["summary"] and item.value["category"] == "Goals"
    assert item.value["summary"].startswith("The user"), "memstream's words, not the raw text"
    assert item.value["state"] == "active"
    assert store_for(worker, broker).get(ns, "goal") == item  # any store finds the key

    found = store.search(ns, query="What is the user training for?")
    assert [i.key for i in found] == ["goal"] and found[0].namespace == ns
    assert isinstance(found[0], SearchItem) and 0 < found[0].score <= 1
    assert found[0].value["summary"] == item.value["summary"]

    store.put(ns, "goal", {"text": GOAL})  # the same value again: memstream's words stay
    assert store.get(ns, "goal").value["summary"] == item.value["summary"]
    store.put(ns, "goal", item.value)  # what get showed, put back: nothing to change
    assert store.get(ns, "goal").value["summary"] == item.value["summary"]

    store.put(ns, "goal", {"text": "I want to run a half marathon in November."})
    edited = store.get(ns, "goal")
    assert edited.key == "goal" and "half marathon in November" in edited.value["summary"]
    assert edited.value["summary"].startswith("The user")
    assert [i.key for i in store.search(ns)] == ["goal"], "the key's value was replaced"
    assert store.search(ns, query="marathon")[0].value["summary"] == edited.value["summary"]

    store.put(ns, "goal", {"text": edited.value["summary"], "pinned": True})
    assert store.get(ns, "goal").value["pinned"] is True

    store.delete(ns, "goal")
    assert store.get(ns, "goal") is None
    assert store.search(ns, query="marathon") == []
    assert store.search(ns) == []
    store.delete(ns, "goal")  # absent: nothing to do

    store.put(ns, "goal", {"text": edited.value["summary"]})  # put back: restored
    back = store.get(ns, "goal")
    assert back.key == "goal" and back.value["id"] == edited.value["id"]


def test_a_value_without_prose_is_stored_as_a_fact_of_the_user(worker, broker):
    ns = ("memories", unique_user("store"))
    store = store_for(worker, broker)
    store.put(ns, "theme", {"theme": "dark"})
    item = store.get(ns, "theme")
    assert item is not None and item.key == "theme" and "dark" in item.value["summary"]
    assert [i.key for i in store.search(ns, query="Which theme does the user like?")] == ["theme"]


def test_namespaces_below_the_user_and_list_namespaces_from_the_data(worker, broker):
    user, empty = unique_user("store"), unique_user("store")
    store = store_for(worker, broker, users=[empty])
    top, prefs = ("memories", user), ("memories", user, "prefs")
    store.put(top, "goal", {"text": GOAL})
    store.put(prefs, "goal", {"text": BUDGET})  # the same key in another namespace
    assert "marathon" in store.get(top, "goal").value["summary"]
    assert "grocery" in store.get(prefs, "goal").value["summary"]
    assert [(i.namespace, i.key) for i in store.search(prefs)] == [(prefs, "goal")]
    assert {(i.namespace, i.key) for i in store.search(top)} == {(top, "goal"), (prefs, "goal")}
    assert [i.namespace for i in store.search(prefs, query="How much does the user spend?")] == [prefs]

    assert store.list_namespaces() == [top, prefs]  # the user written to; `empty` holds nothing
    assert store.list_namespaces(prefix=("memories", user, "prefs")) == [prefs]
    assert store.list_namespaces(suffix=("prefs",)) == [prefs]
    assert store.list_namespaces(prefix=("memories", "*", "prefs")) == [prefs]
    assert store.list_namespaces(max_depth=2) == [top]
    assert store.list_namespaces(limit=1, offset=1) == [prefs]
    fresh = store_for(worker, broker)  # another store: the namespaces are the data's
    assert fresh.list_namespaces(prefix=top) == [top, prefs]
    store.delete(prefs, "goal")
    assert fresh.list_namespaces(prefix=top) == [top]


def test_an_item_expires_after_its_ttl(worker, broker):
    ns = ("memories", unique_user("store"))
    store = store_for(worker, broker, ttl={"default_ttl": 60})
    store.put(ns, "goal", {"text": GOAL})
    store.put(ns, "budget", {"text": BUDGET}, ttl=None)  # never expires
    assert store.get(ns, "goal") is not None
    later = datetime.now(timezone.utc) + timedelta(minutes=61)
    future = store_for(worker, broker, clock=lambda: later)
    assert future.get(ns, "goal") is None
    assert [i.key for i in future.search(ns)] == ["budget"]
    assert store.get(ns, "goal") is None, "the expired item was deleted when a read met it"
    assert future.sweep_ttl([ns[1]]) == 0


def test_a_put_memstream_keeps_nothing_of_says_so(worker, broker):
    ns = ("memories", unique_user("store"))
    store = store_for(worker, broker)
    with pytest.raises(NotStoredError) as nothing:
        store.put(ns, "k", {"text": "ok"})  # not a fact: the turn is skipped
    assert nothing.value.outcome == "skipped" and store.get(ns, "k") is None
    with pytest.raises(StoreError, match="broker"):  # a new memory is a chat turn on Kafka
        MemstreamStore(worker.api_url, ADMIN_KEY, "supervisor").put(ns, "k", {"text": GOAL})


def test_a_key_follows_its_memory_when_a_later_fact_supersedes_it(worker, broker):
    ns = ("memories", unique_user("store"))
    store = store_for(worker, broker)
    store.put(ns, "colour", {"text": "My favourite colour is blue."})
    blue = store.get(ns, "colour").key
    store.put(ns, "colour-now", {"text": "My favourite colour is green now."})
    green = store.get(ns, "colour-now")
    assert green.key != blue and "green" in green.value["summary"]
    followed = store.get(ns, "colour")  # the memory that replaced it, under the key asked for
    assert (followed.key, followed.value) == ("colour", green.value)
    assert [i.key for i in store.search(ns)] == [green.key]


async def test_batch_answers_in_op_order_and_async_agrees_with_sync(worker, broker, three):
    user, ids = three
    store = store_for(worker, broker, users=[user])
    ns = ("memories", user)
    ops = [
        ListNamespacesOp(None, None, 10, 0),
        GetOp(ns, "budget"),
        SearchOp(ns, query="How much can the user spend on groceries?", limit=2),
        GetOp(ns, "no-such-key"),
        PutOp(ns, "budget", {"text": "The user's monthly grocery budget is 450 euros."}),
        GetOp(ns, ids["budget"]),
        SearchOp(ns, filter={"category": "Budget"}),
    ]
    namespaces, before, found, missing, put, after, listed = await store.abatch(ops)
    assert namespaces == [ns]
    assert before.key == ids["budget"] and "400 euros" in before.value["summary"]
    assert found[0].key == ids["budget"] and len(found) == 2
    assert missing is None and put is None
    assert after.key == ids["budget"] and "450 euros" in after.value["summary"]  # in order
    assert [i.key for i in listed] == [ids["budget"]]

    def stable(item):
        return item.key, item.namespace, item.value["summary"], item.created_at

    assert stable(store.get(ns, "goal")) == stable(await store.aget(ns, "goal"))
    sync = store.search(ns, query="marathon", limit=3)
    assert [i.key for i in sync] == [i.key for i in await store.asearch(ns, query="marathon", limit=3)]
    assert [i.key for i in store.search(ns)] == [i.key for i in await store.asearch(ns)]
    # the sync API also works when called from a coroutine (it runs on a loop of its own)
    assert stable(store.batch([GetOp(ns, "goal")])[0]) == stable(store.get(ns, "goal"))


def test_search_honours_limit_offset_and_filter(worker, broker, three):
    user, ids = three
    store = store_for(worker, broker, record_access=False)  # one read does not rank the next
    ns = ("memories", user)
    for query in ("What does the user plan and spend?", None):
        everything = [i.key for i in store.search(ns, query=query, limit=3)]
        assert sorted(everything) == sorted(ids.values())
        pages = [i.key for offset in range(3)
                 for i in store.search(ns, query=query, limit=1, offset=offset)]
        assert pages == everything
        assert [i.key for i in store.search(ns, query=query, limit=5, offset=2)] == everything[2:]
        goals = store.search(ns, query=query, filter={"category": "Goals"})
        assert [i.key for i in goals] == [ids["goal"]]
        assert store.search(ns, query=query, filter={"pinned": True}) == []
    by_importance = store.search(ns, query="anything", filter={"importance": {"$gte": 5}})
    assert all(i.value["importance"] >= 5 for i in by_importance)
    with pytest.raises(UnsupportedFilterError):
        store.search(ns, query="dog", filter={"summary": "x"})
    with pytest.raises(UnsupportedFilterError):
        store.search(ns, filter={"importance": 5})  # the registry list cannot filter on it
    with pytest.raises(UnsupportedNamespaceError):
        store.search(("memories",), query="dog")  # memory.query is per user


def test_the_agent_allowlist_is_never_widened(worker, broker, three):
    user, ids = three
    ns = ("memories", user)
    planner = store_for(worker, broker, PLANNER_KEY, "planner")
    assert planner.get(ns, ids["pet"]) is None and planner.get(ns, "pet") is None
    assert planner.get(ns, "goal").key == ids["goal"]
    for query in ("Does the user have a dog?", None):
        seen = {i.value["category"] for i in planner.search(ns, query=query, limit=10)}
        assert seen and seen <= {"Goals", "Budget", "Finance", "Conversation_Summary", "Procedural"}
    assert planner.search(ns, filter={"category": "Personal"}) == []  # the key's scope
    with pytest.raises(StoreApiError) as refused:  # memory.query fails closed
        planner.search(ns, query="dog", filter={"category": "Personal"})
    assert refused.value.status == 403
    with pytest.raises(StoreApiError) as refused:  # an agent's key queries only as that agent
        store_for(worker, broker, PLANNER_KEY, "supervisor").search(ns, query="dog")
    assert refused.value.status == 403
    # an admin key asking as the planner gets the planner's allowlist
    as_planner = store_for(worker, broker, ADMIN_KEY, "planner")
    assert ids["pet"] not in {i.key for i in as_planner.search(ns, query="Does the user have a dog?")}


def test_a_put_the_key_may_not_see_raises_and_never_passes_for_done(worker, broker):
    """A planner's put of a Personal fact is stored, and the store says it cannot read it back:
    every time it is put (the same value is the same turn), for a changed value (a new turn,
    processed), and for a delete of the key; a value of the planner's categories then works."""
    ns = ("memories", unique_user("store"))
    planner = store_for(worker, broker, PLANNER_KEY, "planner")
    admin = store_for(worker, broker)
    with pytest.raises(OutOfScopeError):
        planner.put(ns, "pet", {"text": PET})
    with pytest.raises(OutOfScopeError):
        planner.put(ns, "pet", {"text": PET})
    assert planner.get(ns, "pet") is None
    with pytest.raises(OutOfScopeError):
        planner.delete(ns, "pet")
    stored = admin.get(ns, "pet")  # a store that never put it finds it in the key's thread
    assert stored is not None and stored.value["category"] == "Personal"
    assert stored.value["state"] == "active" and "Luna" in stored.value["summary"]
    assert len(stored.value["source_turn_ids"]) == 1, "the same value put again was one turn"

    with pytest.raises(OutOfScopeError):
        planner.put(ns, "pet", {"text": "I adopted a parrot named Kiwi."})
    assert any("Kiwi" in i.value["summary"] for i in admin.search(ns)), "a changed value: a new turn"
    planner.put(ns, "pet", {"text": GOAL})
    mine = planner.get(ns, "pet")
    assert mine is not None and "marathon" in mine.value["summary"]
    planner.delete(ns, "pet")
    assert planner.get(ns, "pet") is None
    status, doc = asyncio.run(call(worker.api_url, "GET", f"/v1/users/{ns[1]}/memories/{mine.value['id']}"))
    assert status == 200 and doc["state"] == "soft_deleted", "the delete was confirmed"


def test_list_namespaces_answers_the_users_the_key_may_read(worker, broker):
    other = unique_user("store")
    store_for(worker, broker).put(("memories", other), "goal", {"text": GOAL})
    scoped = store_for(worker, broker, SCOPED_KEY, users=[other, SCOPED_USER])
    assert scoped.list_namespaces() == [], "no data for the scoped user; the other is not its"
    scoped.put(("memories", SCOPED_USER), "goal", {"text": GOAL})
    assert scoped.list_namespaces() == [("memories", SCOPED_USER)]
    assert scoped.list_namespaces(prefix=("memories", "*"), max_depth=1) == [("memories",)]
    assert scoped.list_namespaces(suffix=(other,)) == []
    admin = store_for(worker, broker, users=[other, SCOPED_USER])
    assert admin.list_namespaces() == sorted([("memories", other), ("memories", SCOPED_USER)])
    assert admin.list_namespaces(limit=1, offset=1) == [max(("memories", other), ("memories", SCOPED_USER))]


def test_a_graphs_messages_feed_chat_turns_and_come_back_through_the_store(worker, broker):
    """`memory_node` in a real LangGraph graph: the run's exchange becomes chat turns of the
    user the config names, and what memstream learnt from them is an item of the store."""
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph import END, START, MessagesState, StateGraph

    from streams.client.langgraph_turns import MissingRunIdentity, memory_node

    user = unique_user("graph")
    store = store_for(worker, broker)
    graph = StateGraph(MessagesState)
    graph.add_node("agent", lambda state: {"messages": [AIMessage("Miso is a lovely name.")]})
    graph.add_node("remember", memory_node(store.client, wait=True))
    graph.add_edge(START, "agent")
    graph.add_edge("agent", "remember")
    graph.add_edge("remember", END)
    app = graph.compile()
    said = HumanMessage("I adopted a cat named Miso last week.")
    app.invoke({"messages": [said]}, {"configurable": {"user_id": user, "thread_id": "chat-1"}})

    found = store.search(("memories", user), query="What pet does the user have?")
    assert found and "Miso" in found[0].value["summary"]
    assert found[0].namespace == ("memories", user) and found[0].key == found[0].value["id"]
    assert found[0].value["thread_id"] == "chat-1"
    with pytest.raises(MissingRunIdentity):
        app.invoke({"messages": [said]}, {"configurable": {"thread_id": "chat-1"}})
