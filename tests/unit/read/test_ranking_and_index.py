from datetime import datetime, timedelta, timezone

import numpy as np

from streams.memory import ids
from streams.memory.model import Memory
from streams.read.query import rank
from streams.read.ranking import importance_norm, score
from streams.memory.vector_index import UserIndex, VectorIndex, as_stored, decode_vector, encode_vector
from tests import defaults

T0 = datetime(2024, 5, 1, tzinfo=timezone.utc)


def mem(i: str, importance=3, pinned=False, accessed=T0, state="active") -> Memory:
    return Memory(id=i, user_id="u", type="semantic", summary=f"fact {i}", importance=importance,
                  pinned=pinned, created_at=T0, updated_at=T0, last_accessed=accessed, state=state)


def unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_importance_norm_and_decay():
    assert importance_norm(1) == 0 and importance_norm(5) == 1
    w = defaults.weights(importance=0.20, recency=0.15)  # seed 002's weights, to check the formula
    # importance 2: half-life 90 days; not in the past: no decay
    assert score(mem("a", importance=2, accessed=T0 - timedelta(days=90)), 0, T0, w) == 0.20 * 0.25 + 0.15 * 0.5
    assert score(mem("a", importance=2, accessed=T0 + timedelta(days=1)), 0, T0, w) == 0.20 * 0.25 + 0.15


def test_score_formula_weights():
    w = defaults.weights(importance=0.20, recency=0.15)
    m = mem("a", importance=5, pinned=True)
    assert abs(score(m, 1.0, T0, w) - (0.55 + 0.20 + 0.15 + 0.10)) < 1e-9


def test_pinned_and_important_memory_outranks_slightly_more_similar_one():
    index = UserIndex(2)
    index.upsert(mem("plain", importance=1), unit(1, 0))
    index.upsert(mem("pinned", importance=5, pinned=True), unit(0.95, 0.31))
    hits = rank(index, unit(1, 0), top_k=2, candidates=10, weights=defaults.weights())
    assert [h.memory.id for h in hits] == ["pinned", "plain"]


def test_index_never_returns_invisible_memories():
    index = UserIndex(2)
    index.upsert(mem("gone", state="superseded"), unit(1, 0))
    index.upsert(mem("here"), unit(0, 1))
    assert [m.id for m, _ in index.search(unit(1, 0), 5)] == ["here"]


def test_a_search_by_type_passes_over_archived_and_other_types_and_sees_changes():
    """The write side's search reads state and type from the rows' columns: the best active
    memories of the type, however many archived or other-typed rows score higher, and a
    memory archived since (`update_doc`) is no longer found."""
    index = UserIndex(2)
    for n in range(40):  # closest to the query, but archived
        index.upsert(mem(f"old{n}", state="archived"), unit(1, 0.01 * n))
    index.upsert(mem("episode").model_copy(update={"type": "episodic"}), unit(1, 0.5))
    index.upsert(mem("near"), unit(1, 0.8))
    index.upsert(mem("far"), unit(0, 1))
    assert [m.id for m, _ in index.search(unit(1, 0), 2, "semantic")] == ["near", "far"]
    assert [m.id for m, _ in index.search(unit(1, 0), 1, "episodic")] == ["episode"]
    assert [m.id for m, _ in index.search(unit(1, 0), 1)] == ["episode"], "any type when none given"
    index.update_doc(mem("near", state="archived"))
    assert [m.id for m, _ in index.search(unit(1, 0), 2, "semantic")] == ["far"]
    assert index.search(unit(1, 0), 1, "procedural") == []


def test_rebuild_from_documents_roundtrips_vectors():
    v = unit(0.6, 0.8)
    m = mem("x").model_copy(update={"embedding_b64": encode_vector(v)})
    assert np.allclose(decode_vector(m.embedding_b64), v, atol=1e-3)  # float16
    assert np.array_equal(decode_vector(m.embedding_b64), as_stored(v))
    index = VectorIndex(2)
    assert index.rebuild([m, mem("no-vector")]) == 1
    assert index.user("u").search(v, 1)[0][0].id == "x"
    assert index.user("u").vector_b64("x") == m.embedding_b64  # re-encoding is lossless


def test_vectors_written_as_float32_before_still_read():
    """Documents, applied records and candidates written before vectors were float16 carry
    plain base64 of float32 values: they decode as they were, and a fresh index row of the
    same vector equals the one a rebuild from the new format makes."""
    import base64

    v = unit(0.6, 0.8)
    old = base64.b64encode(np.asarray(v, dtype=np.float32).tobytes()).decode("ascii")
    assert np.array_equal(decode_vector(old), np.asarray(v, dtype=np.float32))
    assert len(encode_vector(v)) < len(old) + len("h:")
    fresh, rebuilt = VectorIndex(2), VectorIndex(2)
    fresh.add(mem("x"), v)
    rebuilt.rebuild([mem("x").model_copy(update={"embedding_b64": encode_vector(v)})])
    assert fresh.user("u").vector_b64("x") == rebuilt.user("u").vector_b64("x")


def test_ids_are_deterministic():
    assert ids.memory_id("u", "t", "1", 0) == ids.memory_id("u", "t", "1", 0)
    assert ids.memory_id("u", "t", "1", 0) != ids.memory_id("u", "t", "1", 1)
    # ids are free text: no separator can make two users' (or threads') ids meet
    assert ids.memory_id("a", "x|y", "1", 0) != ids.memory_id("a|x", "y", "1", 0)
    assert ids.memory_id("a", "x:y", "1", 0) != ids.memory_id("a", "x", "y:1", 0)
    assert ids.event_id("m", "created", 1) != ids.event_id("m", "updated", 2)
