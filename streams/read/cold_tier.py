"""When a query reaches into the archive, the cold tier (docs/decisions.md, seed 000 §6).

Forgetting moves what is unused into the archive rather than deleting it: archive is cold
storage, kept with its vector and its BM25 text, never in the default answer. A query searches
it too when

- the request asks for it (`include_archived: true`; `false` never does);
- the query points to the past: recall intent ("do you remember…", "when did…") or a time
  phrase ("last May") — what the user asks about then is exactly what aged out;
- the question combines facts ("how many times", "before or after", "what changed":
  `streams.read.evidence`), whose history is the answer;
- the active tier cannot answer: fewer than `top_k` active memories reach `min_similarity`
  (cosine) to the query.

Archived hits then compete on the same relevance, ranked below an active hit that matches as
well (`RankWeights.archived`), and say that they are archived. The originals a consolidated
memory replaced are archived too but never served: the consolidated memory answers for them
(`streams.read.consolidated`).
"""
from __future__ import annotations

from typing import Literal

import numpy as np

ColdReason = Literal["asked", "recall_intent", "weak_active", "combining"]


def reason(include_archived: bool | None, recall: bool, active_cosines: np.ndarray, top_k: int,
           min_similarity: float, combining: bool = False) -> ColdReason | None:
    """Why this query searches the archive too (module doc), or None when it does not.
    `active_cosines` are the cosines of the active rows the query may return."""
    if include_archived is not None:
        return "asked" if include_archived else None
    if recall:
        return "recall_intent"
    if combining:
        return "combining"
    if np.count_nonzero(active_cosines >= min_similarity) < top_k:
        return "weak_active"
    return None
