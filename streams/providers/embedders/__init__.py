"""Text embedders behind one interface, chosen by the `EMBEDDER` setting.

- `local-int8` (the default): all-MiniLM-L6-v2 on ONNX Runtime with int8 weights (`onnx_minilm`),
  the fastest on a CPU; its vectors sit at cosine 0.99 to the reference's;
- `local`: the same model in fp32 through sentence-transformers (`minilm`), the reference;
- `local-onnx`: fp32 on ONNX Runtime, the reference's vectors;
- `bedrock`: Amazon Titan Text Embeddings V2 through Bedrock (`titan`), production's; 1024 d by
  default (`BEDROCK_EMBED_DIMENSIONS` 256/512/1024), seed 002's bands;
- `openai`: any OpenAI-compatible `/v1/embeddings` (`openai_embedder`; OpenAI, Ollama, vLLM,
  llama.cpp, LM Studio), its dimension the server's first answer, its bands uncalibrated
  until measured (docs/llm.md#embeddings).

The ONNX kinds export (and quantise) the model once, cached under `cache_dir`
(`EMBEDDER_CACHE_DIR`, else DATA_DIR/models). `memstream bench embedder` measures the local kinds side by side.
`configured` builds the one the settings name.
"""
from __future__ import annotations

from pathlib import Path

from streams.providers.embedders.base import Embed, Embedder, EmbedderError, EmbedderProfile
from streams.providers.embedders.profiles import (
    MINILM_INT8_PROFILE,
    MINILM_ONNX_PROFILE,
    MINILM_PROFILE,
    TITAN_V2_PROFILE,
)

__all__ = ["Embed", "Embedder", "EmbedderError", "EmbedderProfile", "MINILM_PROFILE",
           "MINILM_ONNX_PROFILE", "MINILM_INT8_PROFILE", "TITAN_V2_PROFILE", "PROFILES",
           "BEDROCK", "OPENAI", "EMBEDDER_KINDS", "profile_of", "create_embedder"]

PROFILES = {"local": MINILM_PROFILE, "local-onnx": MINILM_ONNX_PROFILE, "local-int8": MINILM_INT8_PROFILE}
"""The profile of each local embedder kind, known without loading its model."""
BEDROCK = "bedrock"
OPENAI = "openai"
EMBEDDER_KINDS = (*PROFILES, BEDROCK, OPENAI)
"""Every value EMBEDDER takes."""


def profile_of(kind: str, *, dimensions: int | None = None) -> EmbedderProfile:
    """The profile of embedder `kind` (the `EMBEDDER` setting); `dimensions` is Titan's output
    dimension for `bedrock` (default 1024), the server's for `openai` (which has no default:
    `configured.embedder_profile` asks the server). Raises `EmbedderError`."""
    if kind == OPENAI:
        from streams.providers.embedders.openai_embedder import OPENAI_EMBED_MODEL, openai_profile

        if dimensions is None:
            raise EmbedderError("the openai embedder's dimension is the server's first answer: "
                                "see streams.providers.embedders.configured.embedder_profile")
        return openai_profile(OPENAI_EMBED_MODEL, dimensions)
    if kind == BEDROCK:
        from streams.providers.embedders.titan import titan_profile

        return titan_profile(dimensions or TITAN_V2_PROFILE.dim)
    if kind not in PROFILES:
        raise EmbedderError(f"unknown embedder {kind!r}; this build supports: {', '.join(EMBEDDER_KINDS)}")
    return PROFILES[kind]


def create_embedder(kind: str, batch_size: int = 32, cache_dir: Path | None = None, *,
                    spinning: bool = True, threads: int | None = None) -> Embedder:
    """The embedder named by the `EMBEDDER` setting; `cache_dir` holds the ONNX kinds' files
    (default: .memstream/models). `bedrock` and `openai` get their default options here (openai:
    api.openai.com's text-embedding-3-small, the key of OPENAI_API_KEY); the settings' ones
    come through `configured.build_embedder`. `spinning`, `threads`: see `OnnxMiniLMEmbedder`."""
    if kind == OPENAI:
        import os

        from streams.providers.embedders.openai_embedder import OpenAIEmbedder, OpenAIEmbedOptions

        return OpenAIEmbedder.create(OpenAIEmbedOptions(api_key=os.environ.get("OPENAI_API_KEY", "")))
    profile_of(kind)
    if kind == BEDROCK:
        from streams.providers.embedders.titan import TitanOptions, TitanV2Embedder

        return TitanV2Embedder.create(TitanOptions())
    if kind == "local":
        from streams.providers.embedders.minilm import LocalMiniLMEmbedder

        return LocalMiniLMEmbedder(batch_size=batch_size)
    from streams.providers.embedders.onnx_minilm import OnnxMiniLMEmbedder

    return OnnxMiniLMEmbedder(cache_dir or Path(".memstream") / "models", int8=kind == "local-int8",
                              batch_size=batch_size, spinning=spinning, threads=threads)
