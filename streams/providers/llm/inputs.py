"""The data half of each prompt: the turn, its context or two summaries, as one JSON object.

Sending data as JSON (the instructions live in `prompts/*.txt`) keeps user text apart from the
instructions, and lets the prompts tell the model to treat it as data only.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import date
from typing import Any
from zoneinfo import ZoneInfo

from streams.providers.llm.base import Task
from streams.write.policy import redact
from topics.turns import Role, Turn

TRIGGER_CONTEXT_TURNS = 2  # the trigger is on the hot path: a short prompt is a fast prompt
EXTRACT_CONTEXT_TURNS = 3
"""Context is there to understand a turn ("yes, that one"), not to take facts from: the turns
just before it say what it answers. Every context turn is paid for in tokens on every call."""
CONTEXT_TURN_CHARS = 300
TURN_CHARS = 4000


def turn_day(turn: Turn) -> date:
    """The turn's calendar day in its time zone (UTC when unknown or invalid)."""
    try:
        return turn.ts.astimezone(ZoneInfo(turn.timezone)).date() if turn.timezone else turn.ts.date()
    except (KeyError, ValueError):
        return turn.ts.date()


def _view(n: int, turn: Turn) -> dict[str, Any]:
    """Turn `n` of a call as the model sees it; secrets are redacted (the turn itself was checked
    before). The role is said only when it is not the user's. No date: the relative dates the
    model writes are resolved against each turn's own day afterwards (`GuardedLLM`), so a call
    spanning two days needs none."""
    view: dict[str, Any] = {"n": n, "speaker": turn.speaker_name}
    if turn.role is not Role.user:
        view["role"] = turn.role.value
    return view | {"text": redact(turn.text[:TURN_CHARS])}


def _context(context: Sequence[Turn], limit: int, asked: set[str]) -> list[str]:
    """The last `limit` user/assistant turns of `context`, as "speaker: text"
    lines (tool traces and the turns asked about dropped)."""
    kept = [t for t in context if t.role in (Role.user, Role.assistant) and t.ref not in asked]
    return [f"{t.speaker_name}: {redact(t.text[:CONTEXT_TURN_CHARS])}" for t in kept[-limit:]]


def _dumps(payload: dict[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def turns_input(task: Task, turns: Sequence[tuple[Turn, Sequence[Turn]]]) -> str:
    """User message of a trigger or extraction call about `turns`, numbered from 1: each turn
    with the thread's recent buffer it was seen with, oldest first. One thread's consecutive
    turns: the context is the first turn's (the later ones have the earlier ones before them)."""
    limit = TRIGGER_CONTEXT_TURNS if task is Task.trigger else EXTRACT_CONTEXT_TURNS
    asked = {turn.ref for turn, _ in turns}
    return _dumps({"context": _context(turns[0][1], limit, asked),
                   "turns": [_view(n, turn) for n, (turn, _) in enumerate(turns, 1)]})


def trigger_input(turn: Turn, context: Sequence[Turn]) -> str:
    """User message of the trigger task about one turn."""
    return turns_input(Task.trigger, [(turn, context)])


def extract_input(turn: Turn, context: Sequence[Turn]) -> str:
    """User message of the classifier task about one turn."""
    return turns_input(Task.extract, [(turn, context)])


def same_fact_input(a: str, b: str) -> str:
    """User message of the same-fact task."""
    return _dumps({"a": a, "b": b})
