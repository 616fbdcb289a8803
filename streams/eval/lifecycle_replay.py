"""Figures of the consolidation, promotion and insight passes on LoCoMo, in event time.

Each conversation is replayed through the worker's stages in process (`InProcessPipeline`)
twice: once without the passes, once running them for the user after every session at the
session's last turn time (the event-time watermark; sessions are days or weeks apart, so the
once-a-day passes are due after each). Reported: the memory count (active) of both runs, the
event counts of the passes, and LoCoMo recall (`recall_any`/`recall_all` at k = 5, 10, 20,
the offline bench's measure: the evidence turns among the provenance of the top-k memories)
of both runs, which consolidation must not lower.

    python -m streams.eval.lifecycle_replay /work/shared/datasets/locomo/conv-26.json
"""
from __future__ import annotations

import argparse
import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any

from streams.app.services import settings_embedder
from streams.app.settings import Settings, get_settings
from streams.eval.locomo import LocomoConversation, load_conversation
from streams.eval.recall import KS, RecallReport
from streams.lifecycle.consolidation import ConsolidationConfig, ConsolidationPass
from streams.lifecycle.insights import InsightConfig, InsightPass
from streams.lifecycle.promotion import PromotionConfig, PromotionPass
from streams.pipeline.inprocess import InProcessPipeline
from streams.providers.embedders import Embedder


def passes_of(settings: Settings, pipeline: InProcessPipeline) -> list[Any]:
    """The passes in the runner's order (promotion, consolidation, insights)."""
    embed, llm = pipeline.services.embed, pipeline.services.llm
    return [PromotionPass(PromotionConfig.from_settings(settings), embed=embed),
            ConsolidationPass(ConsolidationConfig.from_settings(settings), llm=llm, embed=embed),
            InsightPass(llm, InsightConfig.from_settings(settings), embed=embed)]


async def replay(conv: LocomoConversation, settings: Settings, embedder: Embedder,
                 lifecycle: bool) -> dict[str, Any]:
    pipeline = InProcessPipeline(settings, embedder)
    passes = passes_of(settings, pipeline) if lifecycle else []
    events: Counter[str] = Counter()
    sessions: dict[str, list[Any]] = {}
    for turn in conv.turns:
        sessions.setdefault(turn.thread_id, []).append(turn)
    for turns in sessions.values():
        await pipeline.ingest(turns)
        now = max(t.ts for t in turns)
        for run in passes:
            for event in await run(pipeline.store.state(), conv.user_id, now):
                events[event.kind] += 1
    report = RecallReport()
    for question in conv.scored_questions:
        hits = await pipeline.query(conv.user_id, question.question, max(KS))
        report.add(question.evidence, [(h.memory.summary, h.memory.source_turn_ids) for h in hits])
    memories = pipeline.store.user_memories(conv.user_id)
    return {"active_memories": sum(m.is_visible for m in memories),
            "by_type": dict(Counter(m.type for m in memories if m.is_visible)),
            "events": dict(events), **report.as_dict()}


async def figures(files: list[Path]) -> dict[str, Any]:
    settings = get_settings()
    embedder = settings_embedder(settings)
    out: dict[str, Any] = {"embedder": embedder.profile.name,
                           "llm": settings.llm_provider, "conversations": {}}
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
