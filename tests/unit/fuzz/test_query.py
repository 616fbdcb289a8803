"""`memory.query` requests (`streams.api.query.parse_body` for POST, `parse_params` for GET)
under hostile input: a usable `QueryRequest` or `InvalidQuery`, whose message (shown to the
caller, and safe to log) names fields but carries none of the input."""
from __future__ import annotations

import json
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from streams.api.query import parse_body, parse_params
from streams.read.errors import InvalidQuery
from tests.fuzzing import (
    MARKER,
    assert_content_free,
    assert_usable,
    dumps,
    fuzz_settings,
    hostile_bytes,
    hostile_times,
    hostile_values,
    marked,
)
from tests.unit.fuzz.records import ids, query_bodies

VALID = {"agent": "planner", "query": f"what about {MARKER}?"}
PARAMS = ["q", "agent", "top_k", "threshold", "return", "budget_tokens", "since_rev", "thread_id",
          "reference_time", "categories"]
PRINCIPALS = st.sampled_from([None, {"role": "admin", "agent_id": "it-admin"},
                              {"role": "agent", "agent_id": "planner"}, {"role": "agent"}])


def check(parse: Any) -> None:
    try:
        request = parse()
    except InvalidQuery as exc:
        assert_content_free(exc)
    else:
        assert_usable(request)


@fuzz_settings(400)
@given(raw=hostile_bytes(query_bodies))
@example(raw=dumps({**VALID, MARKER: 1}).encode())  # named the unknown field
@example(raw=dumps({**VALID, "filters": {MARKER: 1}}).encode())
@example(raw=dumps({**VALID, "reference_time": "0001-01-01T00:00:00+05:00"}).encode())
def test_any_body_gives_a_usable_request_or_a_content_free_invalid_query(raw):
    check(lambda: parse_body(raw))


param_values = st.one_of(marked(), hostile_times, hostile_values.map(
    lambda v: v if isinstance(v, str) else json.dumps(v)), st.integers().map(str),
    st.sampled_from(["1", "0", "-1", "1e999", "nan", "true", "full", "bullets", "²", "٣"]))


@fuzz_settings(400)
@given(params=st.dictionaries(st.sampled_from(PARAMS) | marked(), param_values, max_size=6),
       principal=PRINCIPALS)
@example(params={"q": "x", MARKER: "1"}, principal=None)  # named the unknown parameter
def test_any_query_string_gives_a_usable_request_or_a_content_free_invalid_query(params, principal):
    check(lambda: parse_params(params, principal))


@fuzz_settings(150)
@given(body=query_bodies)
def test_valid_bodies_parse(body):
    assert parse_body(json.dumps(body).encode()).agent == body["agent"]


@fuzz_settings(100)
@given(agent=ids, q=marked(st.text(min_size=1, max_size=8)), top_k=st.integers(1, 50))
def test_valid_query_strings_parse(agent, q, top_k):
    request = parse_params({"q": q, "agent": agent, "top_k": str(top_k)}, None)
    assert (request.agent, request.top_k) == (agent, top_k)
