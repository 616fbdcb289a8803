"""Valid records of each input schema, as JSON-ready data with the marker in their free text;
the fuzz tests break them one field at a time (`tests.fuzzing.near_valid`)."""
from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tests.fuzzing import MARKER, plausible_times

ids = st.tuples(st.from_regex(r"\A[A-Za-z0-9_.:|-]{0,12}\Z"), st.just(MARKER)).map("".join)
"""Valid ids (no whitespace, no slash, at most 200 characters) that carry the marker."""
texts = st.tuples(st.text(max_size=20), st.text(max_size=20)).map(lambda ab: ab[0] + MARKER + ab[1])
"""Free text carrying the marker (no lone surrogates: those cannot be valid)."""
short_texts = st.tuples(st.text(max_size=5), st.text(max_size=5)).map(
    lambda ab: ab[0] + MARKER + ab[1]).filter(lambda t: bool(t.strip()))


def _optional(**fields: st.SearchStrategy[Any]) -> dict[str, st.SearchStrategy[Any]]:
    return fields


turns = st.fixed_dictionaries(
    {"user_id": ids, "thread_id": ids, "turn_id": ids,
     "role": st.sampled_from(["user", "assistant", "tool", "system"]), "text": texts,
     "ts": plausible_times},
    optional=_optional(
        speaker=short_texts, agent_id=ids, run_id=ids, actor_id=ids,
        timezone=st.sampled_from(["UTC", "Europe/Lisbon", "America/New_York", "Asia/Kolkata"]),
        source=st.sampled_from(["chat", "external"]),
        metadata=st.dictionaries(texts, texts | st.integers(), max_size=2)),
)

_ARGUMENTS = {
    "forget": {"query": short_texts}, "dont_remember": {}, "pin": {"memory_id": ids},
    "unpin": {"query": short_texts}, "edit": {"memory_id": ids, "text": short_texts},
    "delete": {"memory_id": ids}, "restore": {"memory_id": ids}, "purge_user": {},
    "block_topic": {"topic": short_texts}, "unblock_topic": {"topic": short_texts},
    "touch": {"memory_ids": st.lists(ids, min_size=1, max_size=3)},
}
commands = st.sampled_from(sorted(_ARGUMENTS)).flatmap(lambda kind: st.fixed_dictionaries(
    {"command_id": ids, "kind": st.just(kind), "user_id": ids, "ts": plausible_times,
     **_ARGUMENTS[kind]},
    optional=_optional(thread_id=ids, turn_id=ids, actor=ids),
))

facts = st.fixed_dictionaries(
    {"type": st.sampled_from(["semantic", "episodic", "procedural", "insight", "consolidated"]),
     "summary": short_texts},
    optional=_optional(category=short_texts, importance=st.integers(1, 5),
                       tags=st.lists(short_texts, max_size=2), entities=st.lists(short_texts, max_size=2),
                       entity_key=short_texts, pinned=st.booleans()),
)
candidates = st.integers(min_value=1, max_value=5).flatmap(lambda count: st.fixed_dictionaries(
    {"turn": turns, "fact": facts, "fact_index": st.integers(0, count - 1),
     "fact_count": st.just(count), "confidence": st.floats(0.0, 1.0)},
    optional=_optional(source_refs=st.lists(ids, max_size=2)),
))

events = st.fixed_dictionaries(
    {"event_id": ids, "kind": st.sampled_from(["created", "updated", "superseded", "purged"]),
     "user_id": ids, "thread_id": ids, "memory_id": ids, "rev": st.integers(0, 10**6),
     "ts": plausible_times, "summary": texts, "category": short_texts},
    optional=_optional(meta=st.dictionaries(short_texts, short_texts, max_size=2)),
)

query_filters = st.fixed_dictionaries({}, optional=_optional(
    user_id=ids, agent_id=ids, run_id=ids, actor_id=ids,
    role=st.sampled_from(["user", "assistant"]), category=short_texts, pinned=st.booleans(),
    importance_min=st.just(1), importance_max=st.just(5),
    updated_after=st.just("2023-01-01"), updated_before=plausible_times.filter(lambda t: t >= "2023"),
))
query_bodies = st.fixed_dictionaries(
    {"agent": ids, "query": short_texts},
    optional=_optional(
        categories=st.lists(short_texts, min_size=1, max_size=3), filters=query_filters,
        top_k=st.integers(1, 100), threshold=st.floats(0.0, 1.0),
        budget_tokens=st.integers(1, 10_000), record_access=st.booleans(),
        reference_time=plausible_times, thread_id=ids,
        **{"return": st.sampled_from(["bullets", "full"])}),
)

edit_bodies = st.fixed_dictionaries({"text": short_texts})
topic_bodies = st.fixed_dictionaries({"topic": short_texts})
