"""`MemstreamStore`'s mapping of LangGraph's ops onto memstream (`streams.client.langgraph_mapping`),
without a worker (the store against a worker: tests/integration/test_memstream_store.py)."""
from __future__ import annotations

import json
import re

import pytest
from langgraph.store.base import GetOp, PutOp, SearchOp

from streams.client import ClientError
from streams.client.langgraph_mapping import (
    KeyTooLongError,
    MissingTextError,
    StoreError,
    UnsupportedFilterError,
    UnsupportedNamespaceError,
    expires_at,
    item_name,
    list_params,
    query_filters,
    text_of,
    thread_for,
    ttl_of,
    turn_of,
)
from streams.client.langgraph_store import MemstreamStore
from topics.query import QueryFilters
from topics.turns import ID_PATTERN


def unreachable_store(**options) -> MemstreamStore:
    """A store whose worker never answers: what these tests do must fail before any request."""
    return MemstreamStore("http://127.0.0.1:9", "key", "planner", broker="127.0.0.1:9", timeout_s=2,
                          **options)


def test_query_filters_become_memory_query_filters():
    filters = query_filters({"category": "Goals", "pinned": True, "role": {"$eq": "user"},
                             "importance": {"$gt": 2, "$lt": 5},
                             "updated_at": {"$gte": "2024-05-01", "$lte": "2024-06-01T00:00:00+00:00"}})
    assert filters == {"category": "Goals", "pinned": True, "role": "user", "importance_min": 3,
                       "importance_max": 4, "updated_after": "2024-05-01",
                       "updated_before": "2024-06-01T00:00:00+00:00"}
    QueryFilters.model_validate_json(json.dumps(filters))  # what the server parses
    assert query_filters({"importance": 4}) == {"importance_min": 4, "importance_max": 4}
    assert query_filters(None) == {}


@pytest.mark.parametrize("bad", [{"summary": "x"}, {"category": {"$ne": "Goals"}},
                                 {"importance": {"$gte": "high"}}, {"updated_at": {"$gt": "2024-01-01"}}])
def test_a_filter_memory_query_cannot_apply_is_refused(bad):
    with pytest.raises(UnsupportedFilterError):
        query_filters(bad)


def test_a_search_without_query_filters_on_category_and_pinned_only():
    assert list_params({"category": "Goals", "pinned": False}) == {"category": "Goals", "pinned": False}
    for bad in ({"importance": 3}, {"pinned": "yes"}, {"agent_id": "planner"}):
        with pytest.raises(UnsupportedFilterError):
            list_params(bad)


def test_the_text_of_a_put():
    assert text_of({"text": " I like tea. ", "summary": ""}, None) == "I like tea."
    assert text_of({"summary": "a", "content": "b"}, None) == "a"
    assert text_of({"memory": "m"}, None) == "m"
    assert text_of({"note": {"body": "x"}, "tags": ["y", "z"]}, ["note.body", "tags[*]"]) == "x y z"
    assert text_of({"text": "ignored", "other": "o"}, ["other"]) == "o"
    with pytest.raises(MissingTextError):
        text_of({"n": 3}, ["text"])


def test_a_value_without_prose_is_said_in_the_first_person():
    assert text_of({"theme": "dark"}, None) == "my theme is dark."
    assert text_of({"text": "  ", "preferred_language": "French", "ui": {"font_size": 14},
                    "colours": ["red", "blue"], "beta": True, "gone": None}, None) == (
        "my preferred language is French, my ui font size is 14, my colours is red, blue "
        "and my beta is yes.")
    for nothing in ({}, {"a": None, "b": "", "c": []}):
        with pytest.raises(MissingTextError):
            text_of(nothing, None)


def test_a_thread_spells_the_namespace_below_the_user_and_the_key():
    for tail, key in [((), "goal"), (("prefs", "ui"), "a key / with spaces"), ((), "ключ")]:
        thread = thread_for(tail, key)
        assert re.match(ID_PATTERN, thread) and item_name(thread) == (tail, key)
    assert thread_for((), "goal") != thread_for((), "goal2") != thread_for(("x",), "goal2")
    for chat in (None, "t1", "lg.not-base64!", "lg." + "e30"):  # e30: "{}", not [tail, key]
        assert item_name(chat) is None
    with pytest.raises(KeyTooLongError):
        thread_for((), "k" * 200)


def test_a_turn_id_is_the_value_put_and_carries_its_ttl():
    ns = ("memories", "ana")
    plain = turn_of(ns, "k", {"text": "a"})
    assert plain == turn_of(ns, "k", {"text": "a"}) != turn_of(ns, "k", {"text": "b"})
    timed = turn_of(ns, "k", {"text": "a"}, ttl=90)
    assert re.match(ID_PATTERN, timed) and timed.endswith("~90") and timed != plain
    thread = thread_for((), "k")
    refs = [f"{thread}:{timed}", "t1:x", f"{thread}:{plain}"]
    assert ttl_of(refs, thread) is None  # the latest put of the thread has none
    assert ttl_of(refs[:2], thread) == 90 and ttl_of(["t1:x"], thread) is None
    doc = {"updated_at": "2024-05-01T10:00:00+00:00", "last_accessed": "2024-05-02T10:00:00Z"}
    assert expires_at(doc, 60).isoformat() == "2024-05-02T11:00:00+00:00"
    assert expires_at(doc, None) is None


def test_namespaces_start_with_prefix_and_user():
    store = unreachable_store()
    assert store.split(("memories", "ana")) == ("ana", ())
    assert store.split(("memories", "ana", "prefs", "ui")) == ("ana", ("prefs", "ui"))
    for bad in [("memories",), ("ana",), ("other", "ana"), ("memories", "")]:
        with pytest.raises(UnsupportedNamespaceError):
            store.split(bad)
    assert unreachable_store(prefix="mem").split(("mem", "ana")) == ("ana", ())


@pytest.mark.parametrize("op, error", [
    (GetOp(("users", "ana"), "k"), UnsupportedNamespaceError),
    (SearchOp(("memories",), None, 10, 0, "dog"), UnsupportedNamespaceError),
    (SearchOp(("memories", "ana"), {"summary": "x"}, 10, 0, "dog"), UnsupportedFilterError),
    (SearchOp(("memories", "ana"), None, 0, 0, "dog"), ValueError),
    (PutOp(("memories", "ana"), "k", {"n": None}), MissingTextError),
    (PutOp(("memories", "ana"), "k" * 300, {"text": "I like tea."}), KeyTooLongError),
])
def test_bad_ops_fail_before_any_request(op, error):
    with pytest.raises(error):
        unreachable_store().batch([op])


async def test_bad_ops_fail_alike_from_abatch():
    with pytest.raises(UnsupportedNamespaceError):
        await unreachable_store().abatch([GetOp(("users", "ana"), "k")])


def test_list_namespaces_without_users_answers_nothing():
    assert unreachable_store().list_namespaces() == []


def test_errors_share_one_root():
    assert issubclass(UnsupportedFilterError, StoreError) and issubclass(MissingTextError, StoreError)
    assert issubclass(StoreError, ClientError)
