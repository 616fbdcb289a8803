"""The embedder profiles: each model's name, dimension and dedup bands.

Bands are calibrated per embedder on the 150 labelled pairs of tests/data/same_fact_pairs.jsonl
(`EMBEDDER=<kind> python -m benchmarks.calibration`). Episodic keeps seed 002's +0.02 offset.
"""
from __future__ import annotations

from streams.providers.embedders.base import EmbedderProfile

# Seed 002's bands, recorded per profile. MiniLM's: at the seed's 0.90/0.80, "same fact"
# precision was 0.74 (changed values and related facts score like paraphrases); at 0.94/0.90
# precision and recall are both 0.90.
MINILM_PROFILE = EmbedderProfile("all-MiniLM-L6-v2", 384, 0.94, 0.90, 0.96, 0.92)
# The same model on ONNX Runtime in fp32: its vectors match the reference's to 1e-5 in cosine,
# and the calibration's every figure is the reference's, so are its bands.
MINILM_ONNX_PROFILE = EmbedderProfile("all-MiniLM-L6-v2 onnx", 384, 0.94, 0.90, 0.96, 0.92)
# int8 weights score every pair ~0.01 lower (paraphrases: mean 0.949 against 0.958). Calibrated
# with one text per run (as the embedder runs, for deterministic vectors): at 0.91/0.89 "same
# fact" P=0.938 R=0.900 F1=0.918 (changed values superseded 97%, none merged); 0.91/0.88 gave
# P=0.900 R=0.900.
MINILM_INT8_PROFILE = EmbedderProfile("all-MiniLM-L6-v2 onnx-int8", 384, 0.91, 0.89, 0.93, 0.91)
TITAN_V2_PROFILE = EmbedderProfile("amazon.titan-embed-text-v2:0", 1024, 0.90, 0.80, 0.92, 0.85)
# EMBEDDER=openai: any model behind an OpenAI-compatible /v1/embeddings, its dimension the
# server's first answer. No model was measured, so the bands are defaults that err toward two
# memories over one wrong merge: only near-identical texts merge unchecked (>= 0.95), the
# same-fact check sees [0.85, 0.95), and a paraphrase the model scores lower stays a second
# memory (recoverable; a wrong merge loses a fact). Uncalibrated until `benchmarks.calibration`
# and `benchmarks.score_calibration` are run for the model (docs/llm.md#embeddings).
OPENAI_PROFILE = EmbedderProfile("openai", 0, 0.95, 0.85, 0.97, 0.87, calibrated=False)
OPENAI_CALIBRATED: dict[str, EmbedderProfile] = {}
"""OPENAI_EMBED_MODEL -> its measured bands (`calibrated=True`), as `benchmarks.calibration`
recommended them; a model not here gets `OPENAI_PROFILE`."""
