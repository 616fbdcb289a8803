"""Prometheus metrics of the LLM providers, on the worker's registry (`streams.observability.metrics.REGISTRY`)."""
from __future__ import annotations

from prometheus_client import Counter, Histogram

from streams.observability.metrics import REGISTRY

LLM_CALLS = Counter(
    "memstream_llm_calls_total", "LLM provider calls, by outcome (ok or fallback).",
    ["provider", "task", "outcome"], registry=REGISTRY,
)
LLM_FALLBACKS = Counter(
    "memstream_llm_fallbacks_total", "LLM answers given by the rules instead, by reason: one per "
    "call, or per turn for the trigger and extraction (a call about several turns that fails "
    "counts each; a turn its answer misses counts invalid_output).",
    ["provider", "task", "reason"], registry=REGISTRY,
)
LLM_SECONDS = Histogram(
    "memstream_llm_call_duration_seconds",
    "Time of one LLM call within its budget, by outcome (ok, or fallback: timeout, error, invalid).",
    ["provider", "task", "outcome"],
    buckets=(0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5),
    registry=REGISTRY,
)
LLM_TOKENS = Counter(
    "memstream_llm_tokens_total", "Tokens of LLM calls as the server counted them (usage), by "
    "direction (in: prompt, out: completion).",
    ["provider", "task", "direction"], registry=REGISTRY,
)
LLM_TURNS = Counter(
    "memstream_llm_turns_total", "Turns the trigger and extraction asked the LLM about, by outcome "
    "(ok: its answer stands; fallback: the rules answered). Several a call when batched.",
    ["provider", "task", "outcome"], registry=REGISTRY,
)
