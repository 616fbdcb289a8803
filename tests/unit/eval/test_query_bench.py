"""`memstream bench query`: both paths answer over the same memories; figures are reported."""
from streams.eval.bench_query import build, cached_embeddings, measure, synthetic_memories


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
    assert set(figures) == {"ours", "in_memory_store", "embed_only"}
    assert all(f["n"] == 2 and f["p95"] >= f["p50"] > 0 for f in figures.values())
