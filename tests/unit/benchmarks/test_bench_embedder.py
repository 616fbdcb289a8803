"""`memstream bench embedder`: every kind timed on the same texts, compared to the reference."""
from pathlib import Path

import numpy as np

from benchmarks import bench_embedder
from streams.providers.embedders import MINILM_INT8_PROFILE, MINILM_PROFILE

TINY = Path(__file__).parents[2] / "data" / "locomo_tiny.json"


class FakeEmbedder:
    """Hashes each text to a fixed random unit vector; `noise` moves it off the reference."""

    def __init__(self, profile, noise: float) -> None:
        self.profile, self.noise, self.calls = profile, noise, []

    def embed(self, texts):
        self.calls.append(len(texts))
        rows = []
        for text in texts:
            rng = np.random.default_rng(abs(hash(text)) % 2**32)
            v = rng.normal(size=384) + self.noise * np.random.default_rng(7).normal(size=384)
            rows.append(v / np.linalg.norm(v))
        return np.array(rows, dtype=np.float32)


def test_every_kind_runs_on_the_same_texts_and_is_compared_to_the_reference(monkeypatch):
    made = {}

    def create(kind, batch_size, cache_dir):
        made[kind] = FakeEmbedder(MINILM_PROFILE if kind == "local" else MINILM_INT8_PROFILE,
                                  0.0 if kind == "local" else 0.3)
        return made[kind]

    monkeypatch.setattr(bench_embedder, "create_embedder", create)
    report = bench_embedder.run_embedder_bench([TINY], ["local-int8"], texts=50, single=3, rounds=2,
                                               batch_size=4)
    assert set(report["kinds"]) == {"local", "local-int8"}  # the reference always runs
    ref, int8 = report["kinds"]["local"], report["kinds"]["local-int8"]
    assert ref["cosine_to_reference"] == {"mean": 1.0, "min": 1.0}
    assert 0.5 < int8["cosine_to_reference"]["min"] <= int8["cosine_to_reference"]["mean"] < 0.999
    assert ref["speedup"] == {"batched": 1.0, "single": 1.0}
    for figures in report["kinds"].values():
        assert figures["batched_texts_per_s"]["best"] >= figures["batched_texts_per_s"]["median"] > 0
    # all 6 turns of the file (fewer than asked): warm-up, then per round batches of 4, 3 singles
    assert made["local-int8"].calls == [4] + [4, 2, 1, 1, 1] * 2
    assert report["texts"] == 6
