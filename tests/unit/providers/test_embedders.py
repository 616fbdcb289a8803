"""The embedder kinds of the `EMBEDDER` setting: selection, the ONNX kinds' vectors against the
fp32 reference, and their ONNX files made once and reused from the cache dir.

Speed is what `memstream bench embedder` measures; nothing here asserts a timing.
"""
from __future__ import annotations

import itertools
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from streams.app.services import Services, settings_embedder
from streams.providers.embedders import (
    MINILM_INT8_PROFILE,
    MINILM_ONNX_PROFILE,
    MINILM_PROFILE,
    PROFILES,
    EmbedderError,
    create_embedder,
    profile_of,
)
from streams.providers.embedders import onnx_export
from streams.providers.embedders.onnx_minilm import OnnxMiniLMEmbedder
from tests.unit.providers.conftest import settings

SENTENCES = [
    "I adopted a rescue dog named Rex last spring.",
    "Caroline is moving to Lisbon for a new job in September.",
    "What did we talk about last week?",
    "My sister's birthday is on the 14th of March, and she loves sunflowers and jazz.",
    "ok",
]


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("embedder-cache")


@pytest.fixture(scope="session")
def onnx_fp32(cache_dir: Path) -> OnnxMiniLMEmbedder:
    embedder = create_embedder("local-onnx", 32, cache_dir)
    assert isinstance(embedder, OnnxMiniLMEmbedder)
    return embedder


@pytest.fixture(scope="session")
def onnx_int8(cache_dir: Path, onnx_fp32: OnnxMiniLMEmbedder) -> OnnxMiniLMEmbedder:
    embedder = create_embedder("local-int8", 32, cache_dir)
    assert isinstance(embedder, OnnxMiniLMEmbedder)
    return embedder


def test_every_kind_has_its_own_profile() -> None:
    assert PROFILES == {"local": MINILM_PROFILE, "local-onnx": MINILM_ONNX_PROFILE,
                        "local-int8": MINILM_INT8_PROFILE}
    assert len({p.name for p in PROFILES.values()}) == 3  # metrics and caches tell them apart
    assert all(p.dim == 384 for p in PROFILES.values())
    with pytest.raises(EmbedderError, match="local-int8, bedrock"):
        profile_of("titan")


def test_int8_is_the_default_kind() -> None:
    from streams.settings import EmbeddingSettings

    assert EmbeddingSettings.model_fields["embedder"].default == "local-int8"


def test_the_setting_picks_the_profile_without_loading_a_model(tmp_path: Path) -> None:
    services = Services(settings(embedder="local-int8", embedder_cache_dir=tmp_path))
    assert services.profile() == MINILM_INT8_PROFILE
    assert services.dedup_config().profile == MINILM_INT8_PROFILE
    assert list(tmp_path.iterdir()) == []  # nothing exported yet


def test_the_setting_selects_the_onnx_embedder(cache_dir: Path, onnx_int8: OnnxMiniLMEmbedder) -> None:
    services = Services(settings(embedder="local-int8", embedder_cache_dir=cache_dir))
    embedder = services.embedder()
    assert embedder is onnx_int8 or isinstance(embedder, OnnxMiniLMEmbedder)
    assert embedder.profile == MINILM_INT8_PROFILE
    assert embedder.model_file.parent == cache_dir and embedder.model_file.name.endswith("-int8.onnx")


def test_the_cache_dir_defaults_to_the_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Path | None] = []

    def create(kind: str, batch: int, cache: Path | None, **options: object):
        seen.append(cache)
        return type("Fake", (), {"profile": MINILM_ONNX_PROFILE})()

    monkeypatch.setattr("streams.providers.embedders.configured.create_embedder", create)
    settings_embedder(settings(embedder="local-onnx", data_dir=tmp_path / "w1", embedder_cache_dir=None))
    assert seen == [tmp_path / "w1" / "models"]


# int8: "ok" (3 tokens) sits lowest, at 0.955; sentences at 0.99+.
@pytest.mark.parametrize("kind, floor, mean_floor", [("local-onnx", 0.9999, 0.9999),
                                                     ("local-int8", 0.94, 0.98)])
def test_vectors_are_normalised_and_close_to_the_reference(
    kind: str, floor: float, mean_floor: float, minilm_embedder, onnx_fp32, onnx_int8,
) -> None:
    embedder = {"local-onnx": onnx_fp32, "local-int8": onnx_int8}[kind]
    vectors = embedder.embed(SENTENCES)
    assert vectors.shape == (len(SENTENCES), 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cosines = np.sum(vectors * minilm_embedder.embed(SENTENCES), axis=1)
    assert cosines.min() > floor and cosines.mean() > mean_floor, cosines
    assert embedder.embed([]).shape == (0, 384)


def test_a_text_embeds_alike_alone_and_padded_in_a_batch(onnx_fp32) -> None:
    alone = onnx_fp32.embed(["ok"])[0]
    in_batch = onnx_fp32.embed(SENTENCES)[SENTENCES.index("ok")]
    assert float(alone @ in_batch) > 0.99999


def test_long_texts_are_truncated_like_sentence_transformers(minilm_embedder, onnx_fp32) -> None:
    long = " ".join(["the quick brown fox jumps over the lazy dog"] * 60)  # > 256 tokens
    assert float(onnx_fp32.embed([long])[0] @ minilm_embedder.embed([long])[0]) > 0.9999


def test_the_onnx_files_are_made_once_and_reused(
    cache_dir: Path, onnx_int8, monkeypatch: pytest.MonkeyPatch,
) -> None:
    files = sorted(p.name for p in cache_dir.iterdir())
    assert len(files) == 2 and files[0].endswith("-fp32.onnx") and files[1].endswith("-int8.onnx")
    mtimes = {p: p.stat().st_mtime_ns for p in cache_dir.iterdir()}

    def fail(*_):
        raise AssertionError("the cached file should have been reused")

    monkeypatch.setattr(onnx_export, "export_fp32", fail)
    monkeypatch.setattr(onnx_export, "quantise_int8", fail)
    again = OnnxMiniLMEmbedder(cache_dir, int8=True)
    assert again.model_file == onnx_int8.model_file
    np.testing.assert_allclose(again.embed(SENTENCES[:2]), onnx_int8.embed(SENTENCES[:2]), atol=1e-6)
    assert {p: p.stat().st_mtime_ns for p in cache_dir.iterdir()} == mtimes


def test_attention_is_exported_as_plain_matrix_products(onnx_fp32, onnx_int8) -> None:
    """Eager attention: none of the nodes traced SDPA adds for its mask (IsNaN, and Where, Mul
    beside it), which cost 7-10 % of a short text's run (decisions.md#the-embedder-exports-eager-attention)."""
    import onnx
    for embedder in (onnx_fp32, onnx_int8):
        ops = {node.op_type for node in onnx.load(str(embedder.model_file)).graph.node}
        assert "Softmax" in ops and "IsNaN" not in ops, sorted(ops)


def test_int8_reuses_a_cached_fp32_export(tmp_path: Path, onnx_fp32, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / onnx_fp32.model_file.name).symlink_to(onnx_fp32.model_file)
    monkeypatch.setattr(onnx_export, "export_fp32", lambda *_: pytest.fail("exported again"))
    made = onnx_export.onnx_path(onnx_export_model_dir(), tmp_path, int8=True)
    assert made.name.endswith("-int8.onnx") and made.stat().st_size > 0


def test_a_failed_write_leaves_no_file(tmp_path: Path) -> None:
    def half_write(tmp: Path) -> None:
        tmp.write_bytes(b"partial")
        raise RuntimeError("killed mid-export")

    with pytest.raises(RuntimeError):
        onnx_export._write_atomically(tmp_path / "model.onnx", half_write)
    assert list(tmp_path.iterdir()) == []


def test_a_new_model_gets_a_new_file_name(tmp_path: Path) -> None:
    for name, data in (("config.json", b"{}"), ("model.safetensors", b"weights-1")):
        (tmp_path / name).write_bytes(data)
    first = onnx_export.model_digest(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"weights-2")
    assert onnx_export.model_digest(tmp_path) != first


def onnx_export_model_dir() -> Path:
    from streams.providers.embedders.minilm import minilm_dir

    return minilm_dir()


def test_an_int8_vector_does_not_depend_on_the_texts_beside_it(onnx_int8) -> None:
    """A replay batches texts differently: the same text must get the same vector."""
    text = "Ana adopted a cat named Nora when Ana lived in Porto."
    alone = onnx_int8.embed([text])[0]
    beside = onnx_int8.embed([text, "A much longer sentence about a restaurant in Dublin serving "
                                    "grilled fish on Fridays with friends.", "ok"])[0]
    assert np.array_equal(alone, beside)


def test_quantising_never_works_beside_the_shared_fp32_file(tmp_path: Path, monkeypatch) -> None:
    """onnxruntime writes `<input>-inferred.onnx` beside its input and deletes it after: two
    processes quantising from the shared cache at once broke each other."""
    import onnxruntime.quantization as quantization

    from streams.providers.embedders.onnx_export import quantise_int8

    shared = tmp_path / "minilm-fp32.onnx"
    shared.write_bytes(b"model")
    inputs: list[Path] = []

    def fake_quantize(model_input: str, model_output: str, **kwargs: object) -> None:
        inputs.append(Path(model_input))
        Path(model_output).write_bytes(Path(model_input).read_bytes())

    monkeypatch.setattr(quantization, "quantize_dynamic", fake_quantize)
    quantise_int8(shared, tmp_path / "out.onnx")
    assert inputs and inputs[0].parent != shared.parent
    assert (tmp_path / "out.onnx").read_bytes() == b"model"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["minilm-fp32.onnx", "out.onnx"]


def spins(embedder: OnnxMiniLMEmbedder) -> bool:
    """ONNX Runtime spins unless the session says "0" (no entry: its default, spinning)."""
    try:
        entry = embedder._session.get_session_options().get_session_config_entry(
            "session.intra_op.allow_spinning")
    except RuntimeError:
        return True
    return entry != "0"


def test_a_worker_s_model_threads_do_not_spin_unless_asked(cache_dir: Path, onnx_int8) -> None:
    assert spins(onnx_int8), "the model alone keeps ONNX Runtime's default"
    worker = settings_embedder(settings(embedder="local-int8", embedder_cache_dir=cache_dir,
                                        embedder_threads=1))
    assert isinstance(worker, OnnxMiniLMEmbedder)
    assert not spins(worker)
    assert worker._session.get_session_options().intra_op_num_threads == 1
    spinning = settings_embedder(settings(embedder="local-int8", embedder_cache_dir=cache_dir,
                                          embedder_thread_spinning=True))
    assert spinning is not worker and spins(spinning)
    np.testing.assert_array_equal(worker.embed(SENTENCES), onnx_int8.embed(SENTENCES))


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or (os.cpu_count() or 1) < 2,
                    reason="needs CPU affinity and two cores")
def test_the_model_s_threads_follow_the_cores_the_process_may_use() -> None:
    """A worker pinned to one core (`taskset`, a pinned container) runs its model on one
    thread, whatever the machine has: in a fresh process whose affinity is one core."""
    code = ("import os; os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]}); "
            "from streams.providers.embedders.onnx_minilm import intra_op_threads; "
            "print(os.cpu_count(), intra_op_threads())")
    env = {k: v for k, v in os.environ.items() if k != "LOKY_MAX_CPU_COUNT"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=env, timeout=120).stdout.split()
    machine, threads = int(out[0]), int(out[1])
    assert machine >= 2 and threads == 1


def test_the_onnx_embedders_measure_their_own_cpu(onnx_int8: OnnxMiniLMEmbedder) -> None:
    """`embed_measured` (what the worker counts in memstream_embed_cpu_seconds_total) gives the
    vectors `embed` gives and the CPU the call used, its session's intra-op threads included."""
    vectors, cpu_seconds = onnx_int8.embed_measured(SENTENCES)
    np.testing.assert_array_equal(vectors, onnx_int8.embed(SENTENCES))
    assert cpu_seconds > 0
    assert onnx_int8.embed_measured([])[0].shape == (0, MINILM_INT8_PROFILE.dim)


def test_int8_runs_the_texts_of_a_call_at_once_on_one_thread_each(cache_dir: Path, onnx_int8) -> None:
    """local-int8 runs one text per model run, so it parallelises across texts: its session runs
    on one thread, a call of several texts runs them on its pool at once, a call of one text (a
    query) on its caller's thread; the vectors are those of one text at a time, bit for bit."""
    parallel = create_embedder("local-int8", 32, cache_dir, threads=2)
    assert isinstance(parallel, OnnxMiniLMEmbedder)
    assert parallel._session.get_session_options().intra_op_num_threads == 1
    both_running = threading.Barrier(2, timeout=60)
    arrivals = itertools.count()
    ran_on: list[int] = []
    real = parallel._run

    def meet_then_run(inputs: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
        ran_on.append(threading.get_ident())
        assert inputs[0].shape[0] == 1, "one text a run"
        if next(arrivals) < 2:
            both_running.wait()  # breaks (BrokenBarrierError) unless two texts run at once
        return real(inputs)

    parallel._run = meet_then_run  # type: ignore[method-assign]
    tokenised_on: list[int] = []
    tokenise = parallel._inputs

    def note_thread(texts: list[str]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        tokenised_on.append(threading.get_ident())
        return tokenise(texts)
    parallel._inputs = note_thread  # type: ignore[method-assign]
    vectors, cpu_seconds = parallel.embed_measured(SENTENCES)
    np.testing.assert_array_equal(vectors, onnx_int8.embed(SENTENCES))
    assert len(set(ran_on)) == 2 and threading.get_ident() not in ran_on and cpu_seconds > 0
    assert tokenised_on == [threading.get_ident()], "the texts are tokenised at once, by the caller"
    ran_on.clear()
    np.testing.assert_array_equal(parallel.embed(SENTENCES[:1]), onnx_int8.embed(SENTENCES[:1]))
    assert ran_on == [threading.get_ident()], "one text runs on the caller's thread"


def test_the_dedup_config_is_made_again_only_when_the_settings_or_the_embedder_change(tmp_path: Path) -> None:
    from streams.providers.embedders import EmbedderProfile

    services = Services(settings(embedder="local-int8", embedder_cache_dir=tmp_path))
    first = services.dedup_config()
    assert services.dedup_config() is first, "asked at every record: made once"

    class Loaded:  # the model, once loaded, answers its own profile
        profile = EmbedderProfile("loaded", 384, 0.95, 0.85, 0.97, 0.9)
    services._embedder = Loaded()  # type: ignore[assignment]  # an embedder as the worker loads it
    loaded = services.dedup_config()
    assert loaded is not first and loaded.profile.name == "loaded"
    services.settings = services.settings.with_values(memory_neighbors_k=3)
    assert services.dedup_config().neighbours_k == 3
