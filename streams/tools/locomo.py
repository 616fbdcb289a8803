"""Loader for LoCoMo conversation files (one JSON object per conversation).

Each file becomes one user (id from the file stem), one thread per session and one `Turn`
per dialogue turn, so a conversation can be replayed through the pipeline (`memstream replay`,
which the wheel ships, and the benches); its questions are kept for the provenance-based recall
metric of the benches (`benchmarks/recall.py`, in the source checkout). Format: see the data set's
README (`speaker_a`, `speaker_b`, `session_N`, `session_N_date_time`, `qa`).
"""
from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import dateparser

from streams.language.captions import with_image_caption
from topics.turns import Role, Turn

log = logging.getLogger(__name__)

SCORED_CATEGORIES = frozenset({1, 2, 3, 4})
"""Category 5 is adversarial (unanswerable) and has no evidence worth retrieving."""

TURN_SPACING = timedelta(seconds=30)
_SESSION_KEY = re.compile(r"^session_(\d+)$")
_DIA_ID = re.compile(r"^D:?(\d+):(\d+)$")
_EVIDENCE_SPLIT = re.compile(r"[;,\s]+")
_DATE_SETTINGS = {"TIMEZONE": "UTC", "TO_TIMEZONE": "UTC", "RETURN_AS_TIMEZONE_AWARE": True}


@dataclass(frozen=True)
class LocomoQuestion:
    question: str
    answer: str | None
    evidence: tuple[str, ...]
    category: int

    @property
    def scored(self) -> bool:
        """Whether the question counts for the retrieval metric."""
        return self.category in SCORED_CATEGORIES and bool(self.evidence)


@dataclass(frozen=True)
class LocomoConversation:
    user_id: str
    speakers: tuple[str, str]
    turns: list[Turn]
    questions: list[LocomoQuestion]
    skipped_turns: int = 0

    @property
    def scored_questions(self) -> list[LocomoQuestion]:
        """Questions of category 1–4 that have evidence: the ones recall is computed on."""
        return [q for q in self.questions if q.scored]


def user_id_from_path(path: Path) -> str:
    """File stem made safe for the Turn id pattern (no whitespace, no `/`)."""
    cleaned = re.sub(r"[\s/]+", "_", path.stem.strip())[:200]
    return cleaned or "conversation"


def canonical_dia_id(raw: str) -> str | None:
    """`d1: 3` / `D:1:3` / `D01:3` -> `D1:3`; None when it is not a dialogue id at all."""
    m = _DIA_ID.match(re.sub(r"\s+", "", raw).upper())
    return f"D{int(m.group(1))}:{int(m.group(2))}" if m else None


def normalise_evidence(raw: Any) -> tuple[str, ...]:
    """Evidence entries are messy in the data ("D8:6; D9:17", "D10:2 ", "d3:1", "D").

    Split every entry on `;`, `,` and whitespace, canonicalise each id, drop what is not an
    id, and de-duplicate keeping the order.
    """
    entries = [raw] if isinstance(raw, str) else list(raw or [])
    out: dict[str, None] = {}
    for entry in entries:
        if not isinstance(entry, str):
            continue
        for token in _EVIDENCE_SPLIT.split(entry):
            dia_id = canonical_dia_id(token) if token else None
            if dia_id:
                out[dia_id] = None
    return tuple(out)


def parse_session_time(value: Any) -> datetime | None:
    """Session wall-clock time such as "1:56 pm on 8 May, 2023", read as UTC."""
    if not isinstance(value, str) or not value.strip():
        return None
    parsed = dateparser.parse(value, languages=["en"], settings=_DATE_SETTINGS)
    if parsed is not None and parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed


def load_conversation(path: Path) -> LocomoConversation:
    """Load one LoCoMo conversation file into turns and questions.

    Also accepts one sample of the original `locomo10.json` layout, where the sessions sit
    under a `conversation` key. Malformed turns (no text or no dia_id) are skipped and
    counted; a session whose date cannot be parsed continues from the previous session so
    that turns stay in order.
    """
    path = Path(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected one JSON object per conversation")
    conv = data["conversation"] if isinstance(data.get("conversation"), dict) else data
    user_id = user_id_from_path(path)
    speakers = (str(conv.get("speaker_a", "")), str(conv.get("speaker_b", "")))

    sessions = sorted(
        (int(m.group(1)), key) for key in conv if (m := _SESSION_KEY.match(key))
    )
    turns: list[Turn] = []
    skipped = 0
    undated = 0
    for _, key in sessions:
        raw_turns = conv[key] if isinstance(conv[key], list) else []
        start = parse_session_time(conv.get(f"{key}_date_time"))
        if start is None:
            undated += 1
            start = (
                turns[-1].ts + timedelta(hours=1)
                if turns
                else datetime(2000, 1, 1, tzinfo=timezone.utc)
            )
        for index, raw in enumerate(raw_turns):
            turn = _make_turn(raw, user_id, key, start + index * TURN_SPACING)
            if turn is None:
                skipped += 1
            else:
                turns.append(turn)

    questions = [q for raw in data.get("qa") or [] if (q := _make_question(raw))]
    if skipped or undated:
        log.warning(
            "%s: skipped %d malformed turns; %d sessions without a parseable date",
            path.name, skipped, undated,
        )
    return LocomoConversation(user_id, speakers, turns, questions, skipped)


def _make_turn(raw: Any, user_id: str, thread_id: str, ts: datetime) -> Turn | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("text"), str):
        return None
    raw_id = raw.get("dia_id")
    if not isinstance(raw_id, str) or not raw_id.strip():
        return None
    turn_id = canonical_dia_id(raw_id) or re.sub(r"\s+", "", raw_id)
    text = raw["text"]
    caption = raw.get("blip_caption")
    if isinstance(caption, str) and caption.strip():
        text = with_image_caption(text, caption)
    speaker = raw.get("speaker")
    return Turn(
        user_id=user_id,
        thread_id=thread_id,
        turn_id=turn_id,
        role=Role.user,
        speaker=str(speaker)[:200] if speaker else None,
        text=text,
        ts=ts,
        source="chat",
    )


def _make_question(raw: Any) -> LocomoQuestion | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("question"), str):
        return None
    try:
        category = int(raw.get("category"))
    except (TypeError, ValueError):
        return None
    answer = raw.get("answer")
    return LocomoQuestion(
        question=raw["question"],
        answer=None if answer is None else str(answer),
        evidence=normalise_evidence(raw.get("evidence")),
        category=category,
    )


def load_turns_jsonl(path: Path | str) -> Iterator[dict[str, Any]]:
    """Raw turn dicts from a JSON-lines file (blank lines skipped), for `replay`."""
    with Path(path).open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{lineno}: invalid JSON: {exc.msg}") from exc
            if not isinstance(record, dict):
                raise ValueError(f"{path}:{lineno}: expected a JSON object")
            yield record
