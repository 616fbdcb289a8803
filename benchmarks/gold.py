"""Extraction precision against LoCoMo's gold observations (no LLM).

Each LoCoMo file carries `session_N_observation`: per speaker, a list of `[text, evidence]`
items written by an LLM from the dialogue — what good extraction looks like. Evidence is a
dialogue id (`"D1:3"`), several in one string (`"D26:14, D26:34"`), or a list of them.

`precision_against_gold` is the share of stored memory summaries that state something a gold
observation of the same conversation also states, judged by embedding similarity: a summary
counts when its best cosine similarity to any gold observation is ≥ `threshold`.

Threshold (all-MiniLM-L6-v2): 0.7 — `DEFAULT_THRESHOLD`, read from examples (best gold match
of each fact the rules extractor writes from the six development conversations):
  ≥ 0.8  the same fact, often nearly word for word ("Jon is hosting a dance competition in May
         2023 to showcase local talent …" ~ "Jon is hosting a dance competition next month to
         showcase local talent …", 0.92).
  0.75–0.8  the same fact in other words, sometimes with a detail more or less ("John scored 40
         points, John's highest ever, …" ~ "John scored 40 points in a game last week, his
         highest ever.", 0.79).
  0.7–0.75  about half the same fact ("Nate is proud that Nate can make money doing what Nate
         loves." ~ "… is proud to make money doing what he loves.", 0.75), half the same person
         and topic only ("Safety is important for Audrey." ~ "Audrey values the safety of the
         dogs …", 0.71).
  0.6–0.7  mostly the same person and topic, a different fact ("Audrey can't wait the day
         they're all back to normal." ~ "Pixie has been keeping Audrey busy …", 0.65): with
         MiniLM the shared speaker name and topic alone reach 0.6, so 0.6 over-counts.
So ≥ 0.7 reads as "states (about) a gold fact". The cut is a judgement: report the curve
(`precision_curve`, 0.6/0.7/0.8) beside the single figure.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from streams.tools.locomo import canonical_dia_id, normalise_evidence

DEFAULT_THRESHOLD = 0.7
Embed = Callable[[list[str]], np.ndarray]
"""Texts → one L2-normalised row per text (so a dot product is the cosine)."""


@dataclass(frozen=True)
class Observation:
    """One gold observation: session number, speaker, text, evidence dialogue ids."""

    session: int
    speaker: str
    text: str
    evidence: tuple[str, ...]


def parse_observations(data: dict[str, Any]) -> list[Observation]:
    """Gold observations of one LoCoMo conversation object (sessions in order).

    Accepts the development-file layout and one sample of the original `locomo10.json`, where
    the observations sit under `observation` (and the sessions under `conversation`).
    Malformed items (not a `[text, evidence]` pair, empty text) are skipped.
    """
    source = data.get("observation") if isinstance(data.get("observation"), dict) else data
    out: list[Observation] = []
    keys = []
    for key in source:
        head, _, tail = key.partition("_observation")
        if tail or not head.startswith("session_"):
            continue
        try:
            keys.append((int(head.removeprefix("session_")), key))
        except ValueError:
            continue
    for session, key in sorted(keys):
        per_speaker = source[key]
        if not isinstance(per_speaker, dict):
            continue
        for speaker, items in per_speaker.items():
            for item in items if isinstance(items, list) else []:
                if not (isinstance(item, (list, tuple)) and len(item) >= 2):
                    continue
                text = item[0]
                if not isinstance(text, str) or not text.strip():
                    continue
                evidence = normalise_evidence(item[1])
                out.append(Observation(session, str(speaker), text.strip(), evidence))
    return out


def load_observations(path: Path | str) -> list[Observation]:
    """Gold observations of one LoCoMo conversation file."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected one JSON object per conversation")
    return parse_observations(data)


def gold_texts(path: Path | str) -> list[str]:
    """Just the observation texts of one conversation file."""
    return [o.text for o in load_observations(path)]


def best_similarities(memories: Sequence[str], gold: Sequence[str], embed: Embed) -> np.ndarray:
    """For each memory summary, its best cosine similarity to any gold text (−1 when there is
    no gold text)."""
    if not memories:
        return np.zeros(0, dtype=np.float32)
    if not gold:
        return np.full(len(memories), -1.0, dtype=np.float32)
    m = np.asarray(embed(list(memories)), dtype=np.float32)
    g = np.asarray(embed(list(gold)), dtype=np.float32)
    return (m @ g.T).max(axis=1)


def precision_against_gold(memories: Sequence[str], gold: Sequence[str], embed: Embed,
                           threshold: float = DEFAULT_THRESHOLD) -> float:
    """Share of `memories` whose best cosine similarity to a gold observation (same
    conversation) is ≥ `threshold`; 0.0 when there are no memories."""
    sims = best_similarities(memories, gold, embed)
    return float((sims >= threshold).mean()) if sims.size else 0.0


def precision_curve(memories: Sequence[str], gold: Sequence[str], embed: Embed,
                    thresholds: Iterable[float] = (0.6, 0.7, 0.8)) -> dict[float, float]:
    """`precision_against_gold` at several thresholds (one embedding pass)."""
    sims = best_similarities(memories, gold, embed)
    return {t: (float((sims >= t).mean()) if sims.size else 0.0) for t in thresholds}


def evidence_ids(observations: Iterable[Observation]) -> set[str]:
    """All dialogue ids the observations cite (canonical form)."""
    return {d for o in observations for e in o.evidence if (d := canonical_dia_id(e))}


def extraction_report(paths: Sequence[Path | str], embed: Embed, extractor: Any = None,
                      thresholds: Iterable[float] = (0.6, 0.7, 0.8)) -> dict[str, Any]:
    """Facts the rules extractor writes from every turn of the LoCoMo files (no trigger, no
    dedup): how many, the writing-constraint pass rate (seed 001 §9), and precision against the
    gold observations of the same conversation at `thresholds`."""
    from streams.write.extraction import RulesExtractor
    from streams.tools.locomo import load_conversation
    from streams.write.writing import writing_pass_rate

    extractor = extractor or RulesExtractor()
    thresholds = tuple(thresholds)
    turns = facts = 0
    sims: list[np.ndarray] = []
    all_facts: list[Any] = []
    for path in paths:
        conv = load_conversation(Path(path))
        found = [f for t in conv.turns for f in extractor.extract(t)]
        turns += len(conv.turns)
        facts += len(found)
        all_facts.extend(found)
        sims.append(best_similarities([f.summary for f in found], gold_texts(path), embed))
    joined = np.concatenate(sims) if sims else np.zeros(0)
    stats = dict(getattr(extractor, "stats", {}))
    return {
        "files": [str(p) for p in paths], "turns": turns, "facts": facts,
        "facts_per_turn": round(facts / max(turns, 1), 4),
        "writing_pass_rate": round(writing_pass_rate(all_facts), 4),
        "writer_stats": stats,
        "first_pass_rate": round(stats["first_pass"] / stats["drafted"], 4)
        if stats.get("drafted") else None,
        "precision_against_gold": {
            str(t): round(float((joined >= t).mean()), 4) if joined.size else 0.0
            for t in thresholds
        },
        "mean_best_similarity": round(float(joined.mean()), 4) if joined.size else 0.0,
    }


def main(argv: Sequence[str] | None = None) -> None:
    """`python -m benchmarks.gold FILE…`: the extraction report of the LoCoMo files, as JSON."""
    import sys

    from streams.providers.embedders.minilm import LocalMiniLMEmbedder

    paths = list(argv if argv is not None else sys.argv[1:])
    if not paths:
        raise SystemExit("usage: python -m benchmarks.gold conv-26.json [conv-30.json …]")
    print(json.dumps(extraction_report(paths, LocalMiniLMEmbedder().embed), indent=2))


if __name__ == "__main__":
    main()
