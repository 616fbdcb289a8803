"""`memstream bench query`: both paths answer over the same memories; figures are reported."""
import numpy as np

from benchmarks.bench_query import build, cached_embeddings, measure, synthetic_memories
from tests import defaults


def test_synthetic_memories_are_deterministic_and_mixed():
    first, again = synthetic_memories(300), synthetic_memories(300)
    assert [m.summary for m in first] == [m.summary for m in again]
    episodic = [m for m in first if m.type == "episodic"]
    assert 0.05 < len(episodic) / len(first) < 0.3 and all(m.date_iso for m in episodic)
    assert len({m.category for m in first}) >= 6 and len({m.summary for m in first}) == 300


def test_both_paths_search_the_same_memories_and_are_timed(minilm_embedder, tmp_path):
    memories = synthetic_memories(60)
    vectors = cached_embeddings([m.summary for m in memories], minilm_embedder, tmp_path)
    assert list(tmp_path.iterdir()), "document vectors are cached"
    contenders = build(memories, vectors, minilm_embedder, top_k=5, budget_tokens=256)
    ours = contenders.ours("How much does Ana pay in rent?")
    theirs = contenders.in_memory_store("How much does Ana pay in rent?")
    assert len(ours.items) == 5 and len(theirs) == 5
    assert ours.tokens <= 256 and ours.context.startswith("Memory updates since rev 40:")
    known = {m.id for m in memories}
    assert {i["id"] for i in ours.items} <= known and {item.key for item in theirs} <= known
    figures = measure(contenders, ["What pet does Ana have?"], rounds=2)
    assert set(figures) == {"ours", "ours_after_write", "in_memory_store", "embed_only", "search_only"}
    assert all(f["n"] == 2 and f["p95"] >= f["p50"] > 0 for f in figures.values())


def test_derived_vectors_keep_the_embedded_prefix_and_stay_near_their_source():
    from benchmarks.bench_query import derived_vectors

    rng = np.random.default_rng(0)
    base = rng.normal(size=(10, 384)).astype(np.float32)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    vectors = derived_vectors(base, 35)
    assert vectors.shape == (35, 384) and vectors.dtype == np.float32
    assert np.array_equal(vectors[:10], base)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cosines = np.einsum("ij,ij->i", vectors[10:], base[np.arange(10, 35) % 10])
    assert (cosines > 0.8).all() and (cosines < 0.99).all()
    assert np.array_equal(derived_vectors(base, 35), vectors), "deterministic"
    assert np.array_equal(derived_vectors(base, 4), base[:4])


def test_large_sizes_seed_in_bulk_without_the_store(minilm_embedder, tmp_path):
    from benchmarks.bench_query import seed_vectors

    memories = synthetic_memories(300)
    advanced: list[int] = []
    vectors = seed_vectors(memories, minilm_embedder, tmp_path, embed_max=20, advance=advanced.append)
    assert vectors.shape == (300, minilm_embedder.profile.dim) and sum(advanced) == 20
    seeded: list[int] = []
    contenders = build(memories, vectors, minilm_embedder, top_k=5, budget_tokens=256,
                       with_store=False, advance=seeded.append)
    assert contenders.in_memory_store is None and sum(seeded) == 300
    assert len(contenders.ours("What pet does Ana have?").items) == 5
    figures = measure(contenders, ["What pet does Ana have?"], rounds=1)
    assert set(figures) == {"ours", "ours_after_write", "embed_only", "search_only"}


def test_ours_after_write_writes_one_memory_before_each_query(minilm_embedder, tmp_path):
    from benchmarks.bench_query import seed_vectors

    memories = synthetic_memories(50)
    vectors = seed_vectors(memories, minilm_embedder, tmp_path, embed_max=10)
    contenders = build(memories, vectors, minilm_embedder, top_k=5, budget_tokens=256,
                       with_store=False, retrieval=defaults.retrieval(mode="hybrid"))
    assert set(contenders.lexical_rebuild_ms) == {"cold", "after_one_change"}
    figures = measure(contenders, ["What pet does Ana have?", "Who is Marta?"], rounds=1)
    assert figures["ours_after_write"]["n"] == 2
    assert len(contenders.ours("Who is Marta?").items) == 5
    without = build(memories, vectors, minilm_embedder, top_k=5, budget_tokens=256,
                    with_store=False, after_write=False)
    assert without.ours_after_write is None
