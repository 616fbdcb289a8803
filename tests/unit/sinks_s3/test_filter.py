"""The S3 Vectors filter grammar of the QueryVectors fake: every operator, arrays, invalid filters."""
from __future__ import annotations

from typing import Any

import pytest

from sinks.s3vectors_filter import InvalidFilterError, compile_filter

MEMORY = {"ns_0": "ana", "category": "Personal", "importance": 4, "pinned": False,
          "tags": ["pet", "dog"], "score": 0.5}


@pytest.mark.parametrize(("spec", "expected"), [
    ({"category": "Personal"}, True),                       # shorthand for $eq
    ({"category": "Finance"}, False),
    ({"category": {"$eq": "Personal"}}, True),
    ({"category": {"$ne": "Personal"}}, False),
    ({"category": {"$ne": "Finance"}}, True),
    ({"importance": {"$gt": 3}}, True),
    ({"importance": {"$gt": 4}}, False),
    ({"importance": {"$gte": 4}}, True),
    ({"importance": {"$lt": 4}}, False),
    ({"importance": {"$lte": 4}}, True),
    ({"score": {"$gt": 0.25, "$lt": 0.75}}, True),           # several operators: all must hold
    ({"score": {"$gt": 0.25, "$lt": 0.4}}, False),
    ({"category": {"$in": ["Finance", "Personal"]}}, True),
    ({"category": {"$in": ["Finance", "Goals"]}}, False),
    ({"category": {"$nin": ["Finance", "Goals"]}}, True),
    ({"category": {"$nin": ["Personal"]}}, False),
    ({"category": {"$exists": True}}, True),
    ({"missing": {"$exists": True}}, False),
    ({"missing": {"$exists": False}}, True),
    ({"missing": "x"}, False),
    ({"missing": {"$ne": "x"}}, True),
    ({"missing": {"$nin": ["x"]}}, True),
    ({"missing": {"$gt": 1}}, False),
    ({"tags": "dog"}, True),                                 # an array matches on any element
    ({"tags": {"$eq": "cat"}}, False),
    ({"tags": {"$ne": "dog"}}, False),
    ({"tags": {"$in": ["cat", "pet"]}}, True),
    ({"tags": {"$nin": ["cat", "pet"]}}, False),
    ({"pinned": False}, True),
    ({"pinned": 0}, False),                                  # booleans are not numbers
    ({"importance": True}, False),
    ({"ns_0": "ana", "category": "Personal"}, True),         # several fields: all must hold
    ({"ns_0": "ana", "category": "Finance"}, False),
    ({"$and": [{"ns_0": "ana"}, {"importance": {"$gte": 3}}]}, True),
    ({"$and": [{"ns_0": "ana"}, {"importance": {"$gte": 5}}]}, False),
    ({"$or": [{"category": "Finance"}, {"tags": "dog"}]}, True),
    ({"$or": [{"category": "Finance"}, {"tags": "cat"}]}, False),
    ({"$and": [{"$or": [{"category": "Finance"}, {"pinned": False}]}, {"score": {"$lte": 0.5}}]}, True),
])
def test_operators(spec: dict[str, Any], expected: bool) -> None:
    assert compile_filter(spec)(MEMORY) is expected


@pytest.mark.parametrize(("spec", "where"), [
    ({}, "filter: expected a non-empty object"),
    ([{"a": 1}], "filter: expected a non-empty object, got an array"),
    ({"category": {"$like": "Per%"}}, "category.$like: unknown operator '$like'"),
    ({"$not": {"a": 1}}, "$not: unknown operator '$not' at the top"),
    ({"importance": {"$gt": "3"}}, "importance.$gt: expected a number"),
    ({"importance": {"$gt": True}}, "importance.$gt: expected a number"),
    ({"category": {"$in": []}}, "category.$in: expected a non-empty array"),
    ({"category": {"$in": "Personal"}}, "category.$in: expected a non-empty array"),
    ({"category": {"$nin": [{"a": 1}]}}, "category.$nin: expected a non-empty array"),
    ({"category": {"$exists": "yes"}}, "category.$exists: expected true or false"),
    ({"category": {"$eq": ["a"]}}, "category.$eq: expected a string, number or boolean"),
    ({"category": None}, "category: expected a string, number, boolean or an object of operators, got null"),
    ({"category": {}}, "category: expected a string, number, boolean or an object of operators, got an empty object"),
    ({"$and": []}, "$and: expected a non-empty array of filters"),
    ({"$or": {"a": 1}}, "$or: expected a non-empty array of filters"),
    ({"$and": [{"a": 1}, {"b": {"$gt": "x"}}]}, "$and[1].b.$gt: expected a number"),
])
def test_invalid_filters_are_named_where_they_fail(spec: Any, where: str) -> None:
    with pytest.raises(InvalidFilterError) as error:
        compile_filter(spec)
    assert str(error.value).startswith(where)


def test_errors_never_echo_filter_values() -> None:
    with pytest.raises(InvalidFilterError) as error:
        compile_filter({"summary": {"$in": "Ana's password is hunter2"}})
    assert "hunter2" not in str(error.value)
