"""The memory.query request: strict model, GET form, and who may ask as which agent."""
import json

import pytest

from streams.api.query import check_principal, parse_body, parse_params
from streams.read.errors import InvalidQuery, QueryForbidden


def body(**fields) -> bytes:
    return json.dumps({"agent": "planner", "query": "deployment plan", **fields}).encode()


def test_every_spec_field_is_accepted():
    request = parse_body(body(
        categories=["Goals"], top_k=4, threshold=0.65, budget_tokens=512, since_rev=3,
        thread_id="t1", **{"return": "full"},
        filters={"user_id": "u1", "agent_id": "a", "run_id": "r", "actor_id": "x", "role": "assistant",
                 "category": "Goals", "pinned": False, "importance_min": 1, "importance_max": 5,
                 "updated_after": "2025-07-01", "updated_before": None}))
    assert request.return_ == "full" and request.top_k == 4 and request.filters.role.value == "assistant"
    assert request.filters.after.isoformat() == "2025-07-01T00:00:00+00:00"


@pytest.mark.parametrize("fields, message", [
    ({"colour": "red"}, r"^body: unknown field \(allowed: agent, budget_tokens, categories,"),
    ({"filters": {"owner": "x"}}, r"^filters: unknown field \(allowed: actor_id, agent_id, category,"),
    ({"top_k": "3"}, "top_k"),
    ({"top_k": 0}, "top_k"),
    ({"threshold": 2}, "threshold"),
    ({"return": "everything"}, "return"),
    ({"since_rev": 2}, "since_rev needs thread_id"),
    ({"filters": {"role": "boss"}}, "filters.role"),
    ({"filters": {"pinned": "yes"}}, "filters.pinned"),
    ({"filters": {"importance_min": 4, "importance_max": 2}}, "importance_min is greater"),
    ({"filters": {"updated_after": "2025-07-01T10:00:00"}}, "timezone"),
    ({"filters": {"updated_after": "2025-08-01", "updated_before": "2025-07-01"}}, "later than"),
    ({"query": "   "}, "query is blank"),
])
def test_bad_fields_are_named_errors(fields, message):
    with pytest.raises(InvalidQuery, match=message):
        parse_body(body(**fields))


def test_a_body_that_is_not_json_is_a_clear_error():
    with pytest.raises(InvalidQuery, match="not a valid JSON object"):
        parse_body(b"{agent: planner")


def test_get_form_converts_and_rejects_unknown_parameters():
    request = parse_params({"q": "pets", "agent": "stylist", "top_k": "2", "categories": "Personal",
                            "since_rev": "1", "thread_id": "t"}, None)
    assert (request.query, request.top_k, request.categories, request.since_rev) == ("pets", 2, ["Personal"], 1)
    with pytest.raises(InvalidQuery, match="unknown parameters"):
        parse_params({"q": "pets", "agent": "stylist", "sort": "asc"}, None)
    with pytest.raises(InvalidQuery, match="agent"):
        parse_params({"q": "pets"}, None)


def test_an_agent_key_defaults_and_binds_the_agent():
    principal = {"agent_id": "planner", "role": "agent"}
    assert parse_params({"q": "plan"}, principal).agent == "planner"
    check_principal(principal, "planner")
    with pytest.raises(QueryForbidden):
        check_principal(principal, "supervisor")
    check_principal({"agent_id": "ops", "role": "admin"}, "supervisor")
    with pytest.raises(QueryForbidden):
        check_principal({"agent_id": "planner", "role": "viewer"}, "planner")
