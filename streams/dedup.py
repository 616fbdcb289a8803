"""Create-or-update decision of SPEC §4 (seed 002 bands), as pure functions."""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import Mapping, Sequence

from streams.embedder import EmbedderProfile
from streams.memory import Memory


class Action(str, Enum):
    create = "create"
    update = "update"
    supersede = "supersede"  # same fact, changed value: new memory current, old one superseded


@dataclass(frozen=True)
class Bands:
    auto: float
    check_low: float


@dataclass(frozen=True)
class DedupDecision:
    action: Action
    target: Memory | None
    score: float
    reason: str


def bands_for(memory_type: str, profile: EmbedderProfile) -> Bands:
    if memory_type == "episodic":
        return Bands(profile.episodic_auto, profile.episodic_check_low)
    return Bands(profile.semantic_auto, profile.semantic_check_low)


_NUMBER = re.compile(r"\b\d+(?:[.,]\d+)?\b")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")


def _numbers(text: str) -> set[str]:
    return set(_NUMBER.findall(text))


def _entities(summary: str, entities: Sequence[str]) -> set[str]:
    """Entity set for the heuristic: declared entities, else capitalised words past the first."""
    if entities:
        return {e.lower() for e in entities}
    words = _WORD.findall(summary)
    return {w.lower() for w in words[1:] if w[0].isupper()}


def conflicting_values(a_summary: str, b_summary: str) -> bool:
    """Both state numbers (ages, amounts, years, dates) and they differ."""
    na, nb = _numbers(a_summary), _numbers(b_summary)
    return bool(na and nb and na != nb)


def same_subject(a_summary: str, a_entities: Sequence[str], b_summary: str, b_entities: Sequence[str]) -> bool:
    """Entity overlap >= 70 % (seed 002's threshold)."""
    ea, eb = _entities(a_summary, a_entities), _entities(b_summary, b_entities)
    return bool(ea or eb) and len(ea & eb) / max(len(ea | eb), 1) >= 0.7


def same_fact_heuristic(
    a_summary: str, a_entities: Sequence[str], b_summary: str, b_entities: Sequence[str]
) -> bool:
    """Seed 002: entity overlap >= 70 % and no conflicting number or date."""
    ea, eb = _entities(a_summary, a_entities), _entities(b_summary, b_entities)
    if ea or eb:
        overlap = len(ea & eb) / max(len(ea | eb), 1)
        if overlap < 0.7:
            return False
    na, nb = _numbers(a_summary), _numbers(b_summary)
    if na and nb and na != nb:
        return False
    return True


def decide(
    *,
    memory_type: str,
    summary: str,
    entities: Sequence[str],
    event_time: datetime,
    neighbours: Sequence[tuple[Memory, float]],
    profile: EmbedderProfile,
    merge_window: timedelta,
    use_heuristics: bool = True,
    same_fact: Mapping[str, bool] | None = None,
) -> DedupDecision:
    """Decide whether a candidate updates its best neighbour or becomes a new memory.

    `neighbours` are active memories of the same user and type, best first. `same_fact` holds
    the LLM's same-fact answers by memory id for check-band neighbours, when one was asked;
    otherwise the entity/number heuristics decide.
    """
    bands = bands_for(memory_type, profile)
    for memory, score in neighbours:
        if memory_type == "episodic" and abs(event_time - memory.created_at) > merge_window:
            continue  # episodic merges only within the window
        if score >= bands.check_low and memory_type == "semantic" and conflicting_values(
            summary, memory.summary
        ):
            if score >= bands.auto or same_subject(summary, entities, memory.summary, memory.entities):
                return DedupDecision(Action.supersede, memory, score, "changed_value")
            return DedupDecision(Action.create, None, score, "check_band_different_fact")
        if score >= bands.auto:
            return DedupDecision(Action.update, memory, score, "auto_update_band")
        if score >= bands.check_low:
            if same_fact is not None and memory.id in same_fact:
                same = same_fact[memory.id]
            else:
                same = use_heuristics and same_fact_heuristic(summary, entities, memory.summary,
                                                              memory.entities)
            if same:
                return DedupDecision(Action.update, memory, score, "check_band_same_fact")
            return DedupDecision(Action.create, None, score, "check_band_different_fact")
        break  # neighbours are sorted: nothing further can reach the bands
    best = neighbours[0][1] if neighbours else 0.0
    return DedupDecision(Action.create, None, best, "below_bands")
