"""Loading turns to replay from JSON-lines or LoCoMo files."""
from __future__ import annotations

import logging
from pathlib import Path

from pydantic import ValidationError

from streams.errors import MemstreamError
from streams.tools.locomo import load_conversation, load_turns_jsonl
from topics.turns import Turn

log = logging.getLogger(__name__)


class ReplayFormatError(MemstreamError, ValueError):
    """The file's format is unknown or could not be detected."""


def detect_format(path: Path) -> str:
    if path.suffix == ".jsonl":
        return "jsonl"
    if path.suffix == ".json":
        return "locomo"
    raise ReplayFormatError(f"cannot tell the format of {path.name}; pass --format jsonl|locomo")


def load_turns(path: Path, fmt: str = "auto", user_prefix: str = "") -> list[Turn]:
    """Turns of one file. Invalid JSON-lines rows are skipped and counted in a warning."""
    fmt = detect_format(path) if fmt == "auto" else fmt
    if fmt == "locomo":
        conversation = load_conversation(path)
        if not user_prefix:
            return conversation.turns
        return [t.model_copy(update={"user_id": user_prefix + t.user_id}) for t in conversation.turns]
    if fmt != "jsonl":
        raise ReplayFormatError(f"unknown format {fmt!r}; use jsonl or locomo")
    turns, bad = [], 0
    for row in load_turns_jsonl(path):
        try:
            turns.append(Turn.model_validate(row))
        except ValidationError:
            bad += 1
    if bad:
        log.warning("%s: skipped %d invalid rows", path.name, bad)
    return turns
