"""`chat.turns`: one chat turn as the chat backend produces it (docs/architecture.md#topics)."""
from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from topics.times import EventTime


class Role(str, Enum):
    user = "user"
    assistant = "assistant"
    tool = "tool"
    system = "system"


ID_PATTERN = r"^[^\s/\x00-\x1f\x7f]+$"
"""An id: no white space, no slash (ids appear in URL paths), no control character."""
Identifier = Field(min_length=1, max_length=200, pattern=ID_PATTERN)


class Turn(BaseModel):
    """A chat turn. `ts` is the event time; every downstream time derives from it."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)

    user_id: str = Identifier
    thread_id: str = Identifier
    turn_id: str = Field(min_length=1, max_length=200, pattern=r"^[^\s\x00-\x1f\x7f]+$")
    role: Role
    speaker: str | None = Field(None, max_length=200)
    text: str
    ts: EventTime
    agent_id: str | None = None
    run_id: str | None = None
    actor_id: str | None = None
    timezone: str | None = None
    source: Literal["chat", "external"] = "chat"
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def ref(self) -> str:
        """Provenance reference of this turn: `thread_id:turn_id`."""
        return f"{self.thread_id}:{self.turn_id}"

    @property
    def speaker_name(self) -> str:
        """Who said it, for third-person summaries."""
        if self.speaker:
            return self.speaker
        return "The user" if self.role == Role.user else "The assistant"


def parse_time(value: str) -> datetime:
    """Parse an ISO 8601 time with zone (helper for callers building turns)."""
    return datetime.fromisoformat(value)
