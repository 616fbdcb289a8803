"""`memstream bench details`: does a stored memory keep what an ordinary sentence said?

Each line of the labelled set (`tests/data/details/sentences.jsonl`, written for the project)
is one first-person sentence, its kind (work, family, places, …) and the details a correct
memory must keep: names with their titles ("Dr. Adams"), relation words ("brother"), places,
organisations, numbers with units, dates, every item of a list, brand and model names. A
detail may name alternatives ("Aug. 14|August 14"); a detail is found when any alternative
occurs, case and spacing aside, in a summary of the memories stored for the sentence.

Every sentence is one chat turn of its own user, sent through the worker's stages in this
process (`streams.app.inprocess.InProcessPipeline`: trigger, extraction, the write policy,
dedup, the store — the rules, no LLM), so the figures are those of the path a turn takes to a
stored memory. The report gives, per kind and for the development and held-out parts of the
set: detail recall (details found / details), the share of sentences kept whole (every detail
found), the sentences that stored nothing, the summaries that speak of "companions" (a "we"
the turn never explained), and, with `--json`, every sentence that lost a detail.

It also times the sentence splitter on its own (`split_sentences`, microseconds per turn) on
turns made of 1–4 consecutive labelled sentences, and on LoCoMo turns when files are given, and
reports how many of the joined turns it splits back into exactly their sentences.

`python -m benchmarks.bench_details [--json]` runs the same from any checkout that has this
file, so an older commit's rules can be measured beside today's (docs/benchmarks.md#details).
"""
from __future__ import annotations

import asyncio
import json
import re
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table as RichTable

from topics.turns import Role, Turn

LABELLED = Path(__file__).resolve().parents[1] / "tests/data/details/sentences.jsonl"
SAID = datetime(2024, 5, 8, 12, 0, tzinfo=timezone.utc)
"""When every labelled sentence is said (a Wednesday): relative dates resolve against it."""
COMPANIONS = re.compile(r"\bcompanions\b", re.I)
TIMING_ROUNDS = 5


@dataclass(frozen=True)
class Labelled:
    """One labelled sentence: id, kind, speaker, text, key details, held out or not."""

    id: str
    kind: str
    speaker: str
    text: str
    details: tuple[str, ...]
    holdout: bool


def load_labelled(path: Path = LABELLED) -> list[Labelled]:
    """The labelled sentences of `path` (JSON lines), in file order."""
    out = []
    for line in path.read_text("utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            out.append(Labelled(r["id"], r["kind"], r["speaker"], r["text"],
                                tuple(r["details"]), bool(r.get("holdout", False))))
    return out


def _norm(text: str) -> str:
    return " ".join(text.replace("’", "'").lower().split())


def missing_details(details: Sequence[str], summaries: Sequence[str]) -> list[str]:
    """The details no summary holds (a detail's `|`-separated alternatives: any one will do)."""
    stored = _norm(" \n ".join(summaries))
    return [d for d in details if not any(_norm(alt) in stored for alt in d.split("|"))]


def turn_of(item: Labelled) -> Turn:
    """The chat turn that says `item`, for a user of its own."""
    return Turn(user_id=f"details-{item.id}", thread_id="details", turn_id="1", role=Role.user,
                speaker=item.speaker, text=item.text, ts=SAID)


def stored_summaries(items: Sequence[Labelled]) -> dict[str, list[str]]:
    """Per labelled id, the summaries of the memories its turn left, through the worker's
    stages in process (the settings' defaults, no LLM)."""
    from streams.app.inprocess import InProcessPipeline
    from streams.app.services import settings_embedder
    from streams.settings import get_settings

    settings = get_settings()
    pipeline = InProcessPipeline(settings, settings_embedder(settings))
    asyncio.run(pipeline.ingest([turn_of(i) for i in items]))
    return {i.id: [m.summary for m in pipeline.store.user_memories(turn_of(i).user_id)
                   if m.is_visible] for i in items}


def _score(items: Sequence[Labelled], stored: dict[str, list[str]]) -> dict[str, Any]:
    details = found = whole = empty = 0
    for item in items:
        missing = missing_details(item.details, stored[item.id])
        details += len(item.details)
        found += len(item.details) - len(missing)
        whole += not missing
        empty += not stored[item.id]
    n = max(len(items), 1)
    return {"sentences": len(items), "detail_recall": round(found / max(details, 1), 4),
            "kept_whole": round(whole / n, 4), "stored_nothing": empty}


def detail_report(items: Sequence[Labelled], stored: dict[str, list[str]]) -> dict[str, Any]:
    """Detail recall and the share kept whole, per kind and per part (development, held out),
    and the sentences that lost something."""
    kinds: dict[str, list[Labelled]] = defaultdict(list)
    for item in items:
        kinds[item.kind].append(item)
    lost = [{"id": i.id, "text": i.text, "stored": stored[i.id],
             "missing": missing_details(i.details, stored[i.id])}
            for i in items if missing_details(i.details, stored[i.id])]
    return {
        "all": _score(items, stored),
        "development": _score([i for i in items if not i.holdout], stored),
        "held_out": _score([i for i in items if i.holdout], stored),
        "per_kind": {k: _score(v, stored) for k, v in sorted(kinds.items())},
        "companions": sum(bool(COMPANIONS.search(s)) for v in stored.values() for s in v),
        "lost": lost,
    }


def joined_turns(items: Sequence[Labelled]) -> list[list[str]]:
    """Turns of 1–4 consecutive labelled sentences (each sentence once alone, then runs of 2, 3
    and 4 taken through the set): what a splitter should give back."""
    texts = [i.text for i in items]
    turns = [[t] for t in texts]
    for n in (2, 3, 4):
        turns += [texts[i:i + n] for i in range(0, len(texts) - n + 1, n)]
    return turns


def _per_turn_us(split: Callable[[str], list[str]], texts: Sequence[str]) -> float:
    """The splitter's best time over `TIMING_ROUNDS` rounds, in microseconds per text."""
    best = float("inf")
    for _ in range(TIMING_ROUNDS):
        start = time.perf_counter()
        for text in texts:
            split(text)
        best = min(best, time.perf_counter() - start)
    return round(best / max(len(texts), 1) * 1e6, 2)


def splitter_report(items: Sequence[Labelled], locomo: Sequence[Path] = ()) -> dict[str, Any]:
    """How the project's sentence splitter does on the joined turns, and what it costs."""
    try:
        from streams.language.splitting import split_sentences
    except ImportError:  # a commit from before the library (its regular expressions)
        from streams.language.sentences import split_sentences  # type: ignore[attr-defined,no-redef]  # the module of the commits before the library

    turns = joined_turns(items)
    right = sum([" ".join(s.split()) for s in split_sentences(" ".join(t))] == t for t in turns)
    report: dict[str, Any] = {
        "joined_turns": len(turns), "split_right": round(right / max(len(turns), 1), 4),
        "us_per_turn_joined": _per_turn_us(split_sentences, [" ".join(t) for t in turns]),
    }
    if locomo:
        from streams.tools.locomo import load_conversation

        texts = [t.text for p in locomo for t in load_conversation(p).turns]
        report["locomo_turns"] = len(texts)
        report["us_per_turn_locomo"] = _per_turn_us(split_sentences, texts)
    return report


def run_details_bench(path: Path = LABELLED, locomo: Sequence[Path] = ()) -> dict[str, Any]:
    """The whole report: details kept (`detail_report`) and the splitter (`splitter_report`)."""
    items = load_labelled(path)
    return {"labelled": str(path), **detail_report(items, stored_summaries(items)),
            "splitter": splitter_report(items, locomo)}


def render(report: dict[str, Any], console: Console) -> None:
    table = RichTable(title="details kept: labelled first-person sentences, the default rules")
    for column in ("part", "sentences", "detail recall", "kept whole", "stored nothing"):
        table.add_column(column, justify="left" if column == "part" else "right")
    rows = [("all", report["all"]), ("development", report["development"]),
            ("held out", report["held_out"]), *report["per_kind"].items()]
    for name, s in rows:
        table.add_row(name, str(s["sentences"]), f"{s['detail_recall']:.3f}",
                      f"{s['kept_whole']:.3f}", str(s["stored_nothing"]))
    console.print(table)
    split = report["splitter"]
    console.print(f"splitter: {split['split_right']:.3f} of {split['joined_turns']} joined turns "
                  f"split right, {split['us_per_turn_joined']} µs a turn"
                  + (f", {split['us_per_turn_locomo']} µs a LoCoMo turn" if "us_per_turn_locomo"
                     in split else ""))
    console.print(f"summaries with 'companions': {report['companions']}")
    for lost in report["lost"][:15]:
        console.print(f"  {lost['id']}: missing {lost['missing']} in {lost['stored']}")


def main(argv: Sequence[str]) -> None:
    """`python -m benchmarks.bench_details [--json] [LOCOMO_FILE …]`."""
    as_json = "--json" in argv
    files = [Path(a) for a in argv if a != "--json"]
    report = run_details_bench(LABELLED, files)
    if as_json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        render(report, Console())


if __name__ == "__main__":
    main(sys.argv[1:])
