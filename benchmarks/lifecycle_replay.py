"""Figures of the consolidation, promotion and insight passes on LoCoMo, in event time.

Each conversation is replayed through the worker's stages in process (`InProcessPipeline`),
whose dedup stage runs the lifecycle runner on the event-time watermark as a worker does
(`streams/lifecycle/runner.py`), twice: without promotion, consolidation and insights (the
forgetting pass runs in both), and with them. Reported: the memory count (active) of both runs, the
event counts of the passes, and LoCoMo recall (`recall_any`/`recall_all` at k = 5, 10, 20,
the offline bench's measure: the evidence turns among the provenance of the top-k memories)
of both runs, which consolidation must not lower; events counts are of the lifecycle kinds.

    python -m benchmarks.lifecycle_replay /work/shared/datasets/locomo/conv-26.json
"""
from __future__ import annotations

import argparse
import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any

from streams.app.services import settings_embedder
from streams.settings import Settings, get_settings
from streams.tools.locomo import LocomoConversation, load_conversation
from benchmarks.recall import KS, RecallReport
from streams.app.inprocess import InProcessPipeline
from streams.providers.embedders import Embedder


MINE = ("promotion", "consolidation", "insights")


async def replay(conv: LocomoConversation, settings: Settings, embedder: Embedder,
                 lifecycle: bool) -> dict[str, Any]:
    """The conversation through the in-process stages; the lifecycle runner runs in the dedup
    stage as in a worker — without promotion, consolidation and insights when not `lifecycle`
    (forgetting runs in both)."""
    pipeline = InProcessPipeline(settings, embedder)
    if not lifecycle:
        pipeline.lifecycle.passes = [p for p in pipeline.lifecycle.passes if p.name not in MINE]
    await pipeline.ingest(conv.turns)
    report = RecallReport()
    for question in conv.scored_questions:
        hits = await pipeline.query(conv.user_id, question.question, max(KS))
        report.add(question.evidence, [(h.memory.summary, h.memory.source_turn_ids) for h in hits])
    memories = pipeline.store.user_memories(conv.user_id)
    kinds = Counter(e.kind for e in pipeline.sent_events()
                    if e.kind not in ("created", "updated", "merged", "superseded", "linked"))
    return {"active_memories": sum(m.is_visible for m in memories),
            "by_type": dict(Counter(m.type for m in memories if m.is_visible)),
            "events": dict(kinds), **report.as_dict()}


async def figures(files: list[Path]) -> dict[str, Any]:
    settings = get_settings()
    embedder = settings_embedder(settings)
    out: dict[str, Any] = {"embedder": embedder.profile.name,
                           "llm": settings.llm.llm_provider, "conversations": {}}
    for path in files:
        conv = load_conversation(path)
        before = await replay(conv, settings, embedder, lifecycle=False)
        after = await replay(conv, settings, embedder, lifecycle=True)
        out["conversations"][path.name] = {"turns": len(conv.turns), "without_passes": before,
                                           "with_passes": after}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(figures(args.files)), indent=2, default=str))


if __name__ == "__main__":
    main()
