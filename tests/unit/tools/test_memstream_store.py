"""`MemstreamStore`'s mapping of LangGraph's ops onto memstream, without a worker (the store
against a worker: tests/integration/test_memstream_store.py)."""
from __future__ import annotations

import json
import re

import pytest
from langgraph.store.base import GetOp, PutOp, SearchOp

from streams.tools.memstream_store import (
    MemstreamStore,
    MissingTextError,
    StoreError,
    UnsupportedFilterError,
    UnsupportedNamespaceError,
    list_params,
    query_filters,
    text_of,
    thread_of,
)
from topics.query import QueryFilters
from topics.turns import ID_PATTERN


def unreachable_store(**options) -> MemstreamStore:
    """A store whose worker never answers: what these tests do must fail before any request."""
    return MemstreamStore("http://127.0.0.1:9", "key", "planner", timeout_s=2, **options)


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
    assert list_params({"category": "Goals", "pinned": False}) == {"category": "Goals", "pinned": "false"}
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
        text_of({"text": "   ", "n": 3}, None)


def test_each_key_has_a_thread_of_its_own():
    assert thread_of("goal") == thread_of("goal") != thread_of("goal2")
    assert re.match(ID_PATTERN, thread_of("a key / with spaces"))


def test_namespaces_are_prefix_and_user():
    store = unreachable_store()
    assert store.user_of(("memories", "ana")) == "ana"
    for bad in [("memories",), ("ana",), ("other", "ana"), ("memories", "ana", "Goals")]:
        with pytest.raises(UnsupportedNamespaceError):
            store.user_of(bad)
    assert unreachable_store(prefix="mem").user_of(("mem", "ana")) == "ana"


@pytest.mark.parametrize("op, error", [
    (GetOp(("users", "ana"), "k"), UnsupportedNamespaceError),
    (SearchOp(("memories",), None, 10, 0, "dog"), UnsupportedNamespaceError),
    (SearchOp(("memories", "ana"), {"summary": "x"}, 10, 0, "dog"), UnsupportedFilterError),
    (SearchOp(("memories", "ana"), None, 0, 0, "dog"), ValueError),
    (PutOp(("memories", "ana"), "k", {"n": 1}), MissingTextError),
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
