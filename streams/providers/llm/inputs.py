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

from streams.write.policy import redact
from topics.turns import Role, Turn

TRIGGER_CONTEXT_TURNS = 3  # the trigger is on the hot path: a short prompt is a fast prompt
EXTRACT_CONTEXT_TURNS = 8  # the per-thread buffer (BUFFER_TURNS)
CONTEXT_TURN_CHARS = 500
TURN_CHARS = 4000


def turn_day(turn: Turn) -> date:
    """The turn's calendar day in its time zone (UTC when unknown or invalid)."""
    try:
        return turn.ts.astimezone(ZoneInfo(turn.timezone)).date() if turn.timezone else turn.ts.date()
    except (KeyError, ValueError):
        return turn.ts.date()


def _view(turn: Turn, max_chars: int) -> dict[str, Any]:
    """A turn as the model sees it; secrets are redacted (the turn itself was checked before)."""
    return {"speaker": turn.speaker_name, "role": turn.role.value, "text": redact(turn.text[:max_chars])}


def _context(turn: Turn, context: Sequence[Turn], limit: int) -> list[dict[str, Any]]:
    """The last `limit` user/assistant turns before `turn` (tool traces and the turn itself dropped)."""
    kept = [t for t in context if t.role in (Role.user, Role.assistant) and t.ref != turn.ref]
    return [_view(t, CONTEXT_TURN_CHARS) for t in kept[-limit:]]


def _dumps(payload: dict[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False)


def trigger_input(turn: Turn, context: Sequence[Turn]) -> str:
    """User message of the trigger task."""
    return _dumps({"turn": _view(turn, TURN_CHARS),
                   "context": _context(turn, context, TRIGGER_CONTEXT_TURNS)})


def extract_input(turn: Turn, context: Sequence[Turn]) -> str:
    """User message of the classifier task, with the date relative dates resolve against."""
    day = turn_day(turn)
    view = _view(turn, TURN_CHARS) | {"date": day.isoformat(), "weekday": f"{day:%A}",
                                      "timezone": turn.timezone or "UTC"}
    return _dumps({"turn": view, "context": _context(turn, context, EXTRACT_CONTEXT_TURNS)})


def same_fact_input(a: str, b: str) -> str:
    """User message of the same-fact task."""
    return _dumps({"a": a, "b": b})
