"""Questions that need several memories (issue 53 item 3): the labelled combining set.

`tests/data/combining/` holds chat histories written for the project (one JSON file per user:
dated sessions of user and assistant turns, see its README) and, with each, questions whose
answer needs every one of its evidence turns, of four kinds:

- `both`: two facts said apart ("Which instruments does Maya play?");
- `count`: every occurrence of an event ("How many half marathons has Maya run?");
- `before_after`: two events and their order ("Did Maya get her dog before or after her new
  job?");
- `changed`: a value and the value that replaced it ("How has Maya's diet changed?").

Every user's turns go through the worker's stages in this process (`InProcessPipeline`, the
settings' defaults and embedder, as `bench locomo --offline` builds them), then every question is
asked with `top_k` 10, as a chat backend asks; recall_any/recall_all@5/10 is scored per kind by
provenance (`benchmarks.recall`: a memory's source refs `thread_id:turn_id` against the evidence
turn ids). A question is *covered* when all its evidence is among the sources of the top 10
items that are facts: a conversation episode (the after-turn capture's "On 2024-02-05 we
discussed …", `is_conversation_episode`) names every turn of its session as a source but says
none of their facts, so it counts for recall by provenance, as in `bench locomo`, but covers
nothing.

`python -m benchmarks.combining [--json]` or `memstream bench combining` prints the report.
"""
from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table as RichTable

from benchmarks.recall import RecallReport, dia_id_of
from topics.turns import Role, Turn

SET_DIR = Path(__file__).resolve().parents[1] / "tests/data/combining"
KINDS: tuple[str, ...] = ("both", "count", "before_after", "changed")
TOP_K = 10
REPORTED_KS: tuple[int, ...] = (5, 10)
"""The questions are asked with `TOP_K` 10, so recall at 20 would repeat recall at 10."""
TURN_SPACING = timedelta(seconds=30)


@dataclass(frozen=True)
class CombiningQuestion:
    """One labelled question: its kind, the answer for humans and every turn it needs."""

    id: str
    kind: str
    question: str
    answer: str
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class CombiningConversation:
    """One user's chat history (every session's turns, in order) and its questions."""

    user_id: str
    speaker: str
    turns: list[Turn]
    questions: list[CombiningQuestion]

    def turn(self, turn_id: str) -> Turn | None:
        return next((t for t in self.turns if t.turn_id == turn_id), None)


@dataclass(frozen=True)
class Answered:
    """A question and what the read path ranked for it: (summary, source refs) per item, and
    which of the items are conversation episodes."""

    user_id: str
    question: CombiningQuestion
    items: list[tuple[str, list[str]]]
    episodes: tuple[bool, ...] = ()

    def found(self, k: int = TOP_K) -> set[str]:
        """The evidence turn ids among the sources of the top-k items that are not episodes."""
        episodes = self.episodes or (False,) * len(self.items)
        refs = {dia_id_of(ref) for (_, refs), episode in zip(self.items[:k], episodes)
                if not episode for ref in refs}
        return set(self.question.evidence) & refs

    def missing(self, k: int = TOP_K) -> list[str]:
        found = self.found(k)
        return [e for e in self.question.evidence if e not in found]

    def covered(self, k: int = TOP_K) -> bool:
        """Whether all of the question's evidence is among the top k."""
        return not self.missing(k)


def load_conversation(path: Path) -> CombiningConversation:
    """One user's file: sessions become threads, each turn a `Turn` 30 s after the one before
    from the session's date; the user's turns carry the user's name as speaker."""
    data = json.loads(Path(path).read_text("utf-8"))
    user_id, speaker = data["user_id"], data["speaker"]
    turns = []
    for session in data["sessions"]:
        start = datetime.fromisoformat(session["date"])
        for n, raw in enumerate(session["turns"]):
            role = Role(raw["role"])
            turns.append(Turn(user_id=user_id, thread_id=session["thread_id"], turn_id=raw["id"],
                              role=role, text=raw["text"], ts=start + n * TURN_SPACING,
                              speaker=speaker if role == Role.user else data["assistant"]))
    questions = [CombiningQuestion(q["id"], q["kind"], q["question"], q["answer"],
                                   tuple(q["evidence"])) for q in data["questions"]]
    return CombiningConversation(user_id, speaker, turns, questions)


def load_set(directory: Path = SET_DIR) -> list[CombiningConversation]:
    """Every user's file of `directory` (`*.json`), by file name."""
    return [load_conversation(p) for p in sorted(Path(directory).glob("*.json"))]


def default_pipeline() -> Any:
    """The worker's stages in process with the settings' defaults and their embedder."""
    from streams.app.inprocess import InProcessPipeline
    from streams.app.services import settings_embedder
    from streams.settings import get_settings

    settings = get_settings()
    return InProcessPipeline(settings, settings_embedder(settings))


async def ingest_and_ask(pipeline: Any, conversations: Sequence[CombiningConversation],
                         top_k: int = TOP_K,
                         on_question: Callable[[], None] = lambda: None) -> list[Answered]:
    """Send every user's turns through `pipeline`, then ask every question (an evaluation read,
    not recorded) and keep what it ranked."""
    from streams.read.query import is_conversation_episode

    await pipeline.ingest([t for c in conversations for t in c.turns])
    answered = []
    for conv in conversations:
        for question in conv.questions:
            hits = await pipeline.query(conv.user_id, question.question, top_k)
            answered.append(Answered(conv.user_id, question,
                                     [(h.memory.summary, list(h.memory.source_turn_ids))
                                      for h in hits],
                                     tuple(is_conversation_episode(h.memory) for h in hits)))
            on_question()
    return answered


def stored_evidence(pipeline: Any, conversations: Sequence[CombiningConversation]
                    ) -> dict[str, set[str]]:
    """Per user, the turn ids that some visible memory other than a conversation episode names
    as a source: evidence outside it cannot be covered by any read path that returns visible
    memories only (a medication, kept out by the write policy, is only in an episode)."""
    from streams.read.query import is_conversation_episode

    out = {}
    for conv in conversations:
        out[conv.user_id] = {dia_id_of(ref) for m in pipeline.store.user_memories(conv.user_id)
                             if m.is_visible and not is_conversation_episode(m)
                             for ref in m.source_turn_ids}
    return out


def _recall(answered: Sequence[Answered]) -> dict[str, Any]:
    report = RecallReport()
    for a in answered:
        report.add(a.question.evidence, a.items)
    data = report.as_dict()
    n = max(len(answered), 1)
    return {"questions": data["questions"],
            "covered": {k: round(sum(a.covered(k) for a in answered) / n, 4) for k in REPORTED_KS},
            "recall_any": {k: round(data["recall_any"][k], 4) for k in REPORTED_KS},
            "recall_all": {k: round(data["recall_all"][k], 4) for k in REPORTED_KS},
            "context_words_mean_at": {k: round(data["context_words_mean_at"][k], 1)
                                      for k in REPORTED_KS}}


def covered_share(answered: Sequence[Answered], kind: str, k: int = TOP_K) -> float:
    """The share of `kind`'s questions whose evidence is all among the top k."""
    of_kind = [a for a in answered if a.question.kind == kind]
    return sum(a.covered(k) for a in of_kind) / len(of_kind) if of_kind else 0.0


def combining_report(answered: Sequence[Answered],
                     stored: dict[str, set[str]] | None = None) -> dict[str, Any]:
    """Recall per kind and overall; every question not covered at `TOP_K` with its missing
    evidence, what was ranked first instead, and whether the missing turns are stored at all."""
    misses = []
    for a in answered:
        if a.covered():
            continue
        miss: dict[str, Any] = {"id": a.question.id, "kind": a.question.kind,
                                "question": a.question.question, "missing": a.missing(),
                                "ranked": [text for text, _ in a.items[:3]]}
        if stored is not None:
            miss["missing_not_stored"] = [e for e in a.missing() if e not in stored[a.user_id]]
        misses.append(miss)
    return {"top_k": TOP_K, "all": _recall(answered),
            "per_kind": {kind: _recall([a for a in answered if a.question.kind == kind])
                         for kind in KINDS},
            "not_covered": misses}


def run_combining(directory: Path = SET_DIR, console: Console | None = None) -> dict[str, Any]:
    """The whole bench: ingest the set through a default pipeline, ask, score (with a progress
    bar on `console` when given)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    conversations = load_set(directory)
    pipeline = default_pipeline()
    total = sum(len(c.questions) for c in conversations)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  console=console, disable=console is None, transient=True) as progress:
        task = progress.add_task("ingesting, then asking", total=total)
        answered = asyncio.run(ingest_and_ask(
            pipeline, conversations, on_question=lambda: progress.advance(task)))
    turns = sum(len(c.turns) for c in conversations)
    return {"set": str(directory), "users": len(conversations), "turns": turns,
            **combining_report(answered, stored_evidence(pipeline, conversations))}


def render(report: dict[str, Any], console: Console) -> None:
    table = RichTable(title=f"combining questions: {report['users']} users, {report['turns']} "
                            f"turns, top_k {report['top_k']}, the defaults")
    table.add_column("kind")
    for column in ("n", *(f"any@{k}" for k in REPORTED_KS),
                   *(f"all@{k}" for k in REPORTED_KS), *(f"cov@{k}" for k in REPORTED_KS),
                   "words@10"):
        table.add_column(column, justify="right")
    for name, r in [*report["per_kind"].items(), ("all", report["all"])]:
        table.add_row(name, str(r["questions"]),
                      *(f"{r['recall_any'][k]:.3f}" for k in REPORTED_KS),
                      *(f"{r['recall_all'][k]:.3f}" for k in REPORTED_KS),
                      *(f"{r['covered'][k]:.3f}" for k in REPORTED_KS),
                      f"{r['context_words_mean_at'][10]:.0f}")
    console.print(table)
    console.print("any/all: recall by provenance, as bench locomo; cov: all the evidence among "
                  "the facts of the top k (conversation episodes left out)")
    for miss in report["not_covered"]:
        unstored = miss.get("missing_not_stored")
        console.print(f"  {miss['id']} ({miss['kind']}): missing {miss['missing']}"
                      + (f", not stored: {unstored}" if unstored else "")
                      + f" — {miss['question']}")


def main(argv: Sequence[str]) -> None:
    """`python -m benchmarks.combining [--json]`."""
    console = Console(stderr=True)
    report = run_combining(SET_DIR, console)
    if "--json" in argv:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        render(report, Console())


if __name__ == "__main__":
    main(sys.argv[1:])
