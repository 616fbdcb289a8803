"""How far a read path can go on the memories as they are written: `memstream bench ceilings`.

Issue 53 asks recall_all@10 on LoCoMo up by 0.08 from the read path. This bench says how much
of that any read path can give, by asking the same replay's questions with what no real read
path has, beside the defaults, in one run (the conversations through the worker's stages in
this process with the settings' defaults, as `bench locomo --offline`):

- `defaults`: every scored question as `bench locomo --offline` asks it (top 20);
- `oracle parts`: each question that `combining_kind` calls combining (those the model is
  asked about) with its evidence turns' texts as its parts (`InProcessPipeline.query(parts=…)`),
  the others as the defaults answer them: what a perfect model for `Task.query_parts` reaches
  through `streams.read.evidence.gather` and the answer's cover;
- `oracle order`: the defaults' top `POOL` reordered so that the fewest items that hold all of a
  question's evidence come first (greedy set cover), the rest after them in their order: what a
  perfect reranker of the candidates as they are drawn reaches;
- `lifecycle off`: the defaults on a second replay with the lifecycle off (nothing archived or
  forgotten);
- and, at any k, the share of questions whose every evidence turn is a source of a memory a
  query may return (active; active or archived): what any read path over these memories reaches.

Recall is scored by provenance as in `bench locomo` (`benchmarks.recall`).
`python -m benchmarks.ceilings FILES… [--json]` or `memstream bench ceilings FILES…`.
"""
from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table as RichTable

from benchmarks.recall import KS, Item, RecallReport, dia_id_of
from streams.read.evidence import combining_kind
from streams.tools.locomo import LocomoConversation, load_conversation

POOL = 100
"""Items the defaults' answer is asked for before `oracle order` reorders it (the query's
largest `top_k`, QUERY_MAX_TOP_K)."""
CATEGORIES: tuple[int, ...] = (1, 2, 3, 4)
ROWS: tuple[str, ...] = ("defaults", "oracle parts", "oracle order", "lifecycle off")


def oracle_order(evidence: Sequence[str], items: Sequence[Item]) -> list[Item]:
    """`items` with the fewest that hold all of `evidence` first (greedy: each next the item
    that adds the most evidence turns not yet held, the earlier on a tie), then the rest in
    their order."""
    wanted = set(evidence)
    refs = [{dia_id_of(r) for r in item[1]} & wanted for item in items]
    chosen: list[int] = []
    held: set[str] = set()
    while True:
        gains = [(len(r - held), -i) for i, r in enumerate(refs) if i not in chosen]
        best = max(gains, default=(0, 0))
        if best[0] == 0:
            break
        chosen.append(-best[1])
        held |= refs[-best[1]]
    rest = [i for i in range(len(items)) if i not in chosen]
    return [items[i] for i in chosen + rest]


class Rows:
    """Each row's recall over every question, and per LoCoMo category."""

    def __init__(self) -> None:
        self.reports = {row: {c: RecallReport() for c in (0, *CATEGORIES)} for row in ROWS}

    def add(self, row: str, category: int, evidence: Sequence[str], items: Sequence[Item]) -> None:
        self.reports[row][0].add(evidence, items)
        self.reports[row][category].add(evidence, items)

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for row, by_category in self.reports.items():
            d = by_category[0].as_dict()
            out[row] = {"recall_any": _rounded(d["recall_any"]), "recall_all": _rounded(d["recall_all"]),
                        "context_words_mean_at": _rounded(d["context_words_mean_at"], 1),
                        "recall_all_at_10_per_category": {
                            str(c): round(by_category[c].as_dict()["recall_all"][10], 4)
                            for c in CATEGORIES}}
        return out


def _rounded(by_k: Any, digits: int = 4) -> dict[str, float]:
    """Keys as strings: the report reads the same before and after a JSON round trip."""
    return {str(k): round(v, digits) for k, v in by_k.items()}


def _items(hits: Sequence[Any]) -> list[Item]:
    return [(h.memory.summary, h.memory.source_turn_ids) for h in hits]


def turn_texts(conversation: LocomoConversation) -> dict[str, str]:
    """Each turn's text by its dialogue id (`D3:19`), the id LoCoMo's evidence names."""
    return {dia_id_of(f"{t.thread_id}:{t.turn_id}"): t.text for t in conversation.turns}


async def ask_all(pipeline: Any, conversations: Sequence[LocomoConversation], rows: Rows,
                  on_question: Callable[[], None]) -> None:
    """Every scored question as the defaults, the oracle parts and the oracle order ask it."""
    for conv in conversations:
        texts = turn_texts(conv)
        for q in conv.scored_questions:
            pool = _items(await pipeline.query(conv.user_id, q.question, POOL))
            defaults = _items(await pipeline.query(conv.user_id, q.question, max(KS)))
            rows.add("defaults", q.category, q.evidence, defaults)
            rows.add("oracle order", q.category, q.evidence, oracle_order(q.evidence, pool))
            if combining_kind(q.question) is None:  # no model is asked: the defaults' answer
                oracle = defaults
            else:
                parts = [texts[e] for e in dict.fromkeys(q.evidence) if e in texts]
                oracle = _items(await pipeline.query(conv.user_id, q.question, max(KS), parts=parts))
            rows.add("oracle parts", q.category, q.evidence, oracle)
            on_question()


async def ask_defaults(pipeline: Any, conversations: Sequence[LocomoConversation], rows: Rows,
                       row: str) -> None:
    for conv in conversations:
        for q in conv.scored_questions:
            rows.add(row, q.category, q.evidence,
                     _items(await pipeline.query(conv.user_id, q.question, max(KS))))


def evidence_stored(pipeline: Any, conversations: Sequence[LocomoConversation]) -> dict[str, float]:
    """The share of questions whose every evidence turn is a source of an active memory, and of
    an active or archived one (what a query may return)."""
    counts = {"active": 0, "active_or_archived": 0}
    total = 0
    for conv in conversations:
        memories = pipeline.store.user_memories(conv.user_id)
        active = {dia_id_of(r) for m in memories if m.is_visible for r in m.source_turn_ids}
        either = active | {dia_id_of(r) for m in memories if m.is_archived for r in m.source_turn_ids}
        for q in conv.scored_questions:
            total += 1
            counts["active"] += set(q.evidence) <= active
            counts["active_or_archived"] += set(q.evidence) <= either
    return {name: round(n / max(total, 1), 4) for name, n in counts.items()}


def run_ceilings(files: Sequence[Path], console: Console | None = None) -> dict[str, Any]:
    """The whole bench (module doc), with a progress bar on `console` when given."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from streams.app.inprocess import InProcessPipeline
    from streams.app.services import settings_embedder
    from streams.settings import get_settings

    settings = get_settings()
    embedder = settings_embedder(settings)
    conversations = [load_conversation(p) for p in files]
    turns = [t for c in conversations for t in c.turns]
    rows = Rows()
    total = sum(len(c.scored_questions) for c in conversations)
    pipeline = InProcessPipeline(settings, embedder)
    plain = InProcessPipeline(settings.with_values(lifecycle_enabled=False), embedder)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  console=console, disable=console is None, transient=True) as progress:
        task = progress.add_task("replaying with the defaults", total=None)
        asyncio.run(pipeline.ingest(turns))
        progress.update(task, description="asking", total=total)
        asyncio.run(ask_all(pipeline, conversations, rows, lambda: progress.advance(task)))
        progress.update(task, description="replaying with the lifecycle off", total=None)
        asyncio.run(plain.ingest(turns))
        asyncio.run(ask_defaults(plain, conversations, rows, "lifecycle off"))
    return {"files": [str(p) for p in files], "questions": total, "pool": POOL,
            "lifecycle": settings.lifecycle.lifecycle_enabled, "rows": rows.summary(),
            "evidence_stored": evidence_stored(pipeline, conversations)}


def render(report: dict[str, Any], console: Console) -> None:
    """Two tables that fit an 80-column terminal: recall per row, then all@10 per category."""
    recall = RichTable(title=f"ceilings: {report['questions']} questions, "
                             f"{len(report['files'])} conversations")
    by_category = RichTable(title="all@10 per LoCoMo category")
    for table in (recall, by_category):
        table.add_column("asked as")
    for column in (*(f"any@{k}" for k in KS), *(f"all@{k}" for k in KS), "words@10"):
        recall.add_column(column, justify="right")
    for c in CATEGORIES:
        by_category.add_column(f"cat {c}", justify="right")
    for name, r in report["rows"].items():
        recall.add_row(name, *(f"{r['recall_any'][str(k)]:.3f}" for k in KS),
                       *(f"{r['recall_all'][str(k)]:.3f}" for k in KS),
                       f"{r['context_words_mean_at']['10']:.1f}")
        by_category.add_row(name, *(f"{r['recall_all_at_10_per_category'][str(c)]:.3f}"
                                    for c in CATEGORIES))
    console.print(recall)
    console.print(by_category)
    stored = report["evidence_stored"]
    console.print(f"all evidence stored (any k): in active memories {stored['active']:.3f}, "
                  f"in active or archived ones {stored['active_or_archived']:.3f}")
    console.print(f"oracle parts: a combining question's evidence turns' texts as its parts; "
                  f"oracle order: the defaults' top {report['pool']} reordered, the evidence first")


def main(argv: Sequence[str]) -> None:
    """`python -m benchmarks.ceilings FILES… [--json]`."""
    files = [Path(a) for a in argv if a != "--json"]
    report = run_ceilings(files, Console(stderr=True))
    if "--json" in argv:
        print(json.dumps(report, indent=2))
    else:
        render(report, Console())


if __name__ == "__main__":
    main(sys.argv[1:])
