"""Categories YAML and per-agent allowlists (seed 001 §5): enforced, failing closed."""
import pytest

from streams.read.categories import CategoryPolicy, load_policy
from streams.read.errors import CategoriesConfigError, InvalidQuery, QueryForbidden

YAML = """
categories:
  system:
    - {name: profile, context: all}
    - {name: event, context: rag, rag_length: 30}
  custom:
    - {name: tasks}
allowlists:
  planner: [tasks, event]
"""


def test_default_file_has_the_spec_categories_and_agents():
    policy = load_policy()
    for name in ("Finance", "Budget", "Goals", "Personal", "Education", "Conversation_Summary", "Other"):
        assert policy.spec(name) is not None
    assert {"supervisor", "planner"} <= set(policy.agents)
    assert policy.allowed("supervisor") >= {"personal", "other", "conversation_summary"}


def test_request_narrows_the_allowlist_never_widens_it():
    policy = CategoryPolicy.from_yaml(YAML)
    assert policy.allowed("planner") == {"tasks", "event"}
    assert policy.allowed("planner", ["Tasks"]) == {"tasks"}
    assert policy.allowed("planner", ["tasks", "event"], "event") == {"event"}
    with pytest.raises(QueryForbidden, match="not in the allowlist"):
        policy.allowed("planner", ["tasks", "profile"])
    with pytest.raises(QueryForbidden, match="not in the allowlist"):
        policy.allowed("planner", None, "profile")
    with pytest.raises(InvalidQuery, match="unknown category"):
        policy.allowed("planner", ["secrets"])
    with pytest.raises(QueryForbidden, match="unknown agent"):
        policy.allowed("intruder")
    assert policy.spec("EVENT").rag_length == 30 and policy.spec("profile").context == "all"


@pytest.mark.parametrize("text, problem", [
    ("categories: [", "not valid YAML"),
    ("categories: {system: []}\nallowlists: {planner: [ghost]}", "unknown categories"),
    ("categories: {system: [{name: a}, {name: A}]}\nallowlists: {}", "defined twice"),
    ("categories: {system: [{name: a, context: sometimes}]}\nallowlists: {}", "context"),
    ("allowlists: {}", "categories"),
])
def test_invalid_config_is_refused_with_the_reason(text, problem):
    with pytest.raises(CategoriesConfigError, match=problem):
        CategoryPolicy.from_yaml(text)


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(CategoriesConfigError, match="cannot read"):
        CategoryPolicy.from_path(tmp_path / "nope.yaml")
