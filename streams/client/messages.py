"""Chat messages as turns: what `add` takes, in the shapes agent code already has.

- OpenAI's chat messages: `{"role": "user" | "assistant" | "system" | "developer" | "tool" |
  "function", "content": str | [{"type": "text", "text": ...}, ...], "name": ...}`;
- LangChain's message objects (`HumanMessage`, `AIMessage`, `SystemMessage`, `ToolMessage`, …),
  read by duck typing (`.type`, `.content`, `.name`, `.id`), so the client needs no LangChain;
- a dict in LangChain's serialised form (`{"type": "human", "content": ...}`).

A message with no text (an assistant's tool call, an image alone) is no turn: memstream learns
from what was said. A message's own id (LangChain's `.id`, a dict's `id`) is its turn id, so
adding the same conversation twice applies it once; without one, the turn id is a digest of the
thread, the message's position in this call, its role and text, and the call's time.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from streams.client.errors import ConfigurationError
from topics.turns import Role, Turn

ROLES: dict[str, Role] = {
    "user": Role.user, "human": Role.user,
    "assistant": Role.assistant, "ai": Role.assistant,
    "system": Role.system, "developer": Role.system,
    "tool": Role.tool, "function": Role.tool,
}
"""OpenAI's roles and LangChain's message types, as turn roles."""


class UnsupportedMessage(ConfigurationError, ValueError):
    """A message whose shape or role `add` does not know."""


def _field(message: Any, name: str) -> Any:
    return message.get(name) if isinstance(message, Mapping) else getattr(message, name, None)


def text_of(content: Any) -> str:
    """A message's text: its content string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        parts = [p if isinstance(p, str) else p.get("text", "") if isinstance(p, Mapping)
                 and p.get("type", "text") == "text" else "" for p in content]
        return "\n".join(p.strip() for p in parts if p and p.strip())
    return ""


def role_of(message: Any) -> Role:
    kind = _field(message, "role") or _field(message, "type")
    role = ROLES.get(str(kind).lower()) if kind is not None else None
    if role is None:
        raise UnsupportedMessage(f"a message with role/type {kind!r}: expected one of "
                                 f"{', '.join(sorted(ROLES))}")
    return role


def turns_of(messages: Iterable[Any], user_id: str, thread_id: str, ts: datetime, *,
             speaker: str | None = None, assistant: str | None = None,
             **fields: Any) -> list[Turn]:
    """The turns of `messages` (module doc), all at event time `ts`, in order. `speaker` names
    the user (their display name: "Dana"), `assistant` the assistant, unless a message names its
    author (`name`); `fields` are further turn fields (agent_id, run_id, actor_id, metadata,
    timezone, source)."""
    turns = []
    for position, message in enumerate(messages):
        role = role_of(message)
        text = text_of(_field(message, "content"))
        if not text:
            continue
        name = _field(message, "name")
        default = speaker if role is Role.user else assistant if role is Role.assistant else None
        own_id = _field(message, "id")
        turn_id = str(own_id) if own_id else _digest(thread_id, position, role, text, ts)
        turns.append(Turn(user_id=user_id, thread_id=thread_id, turn_id=turn_id, role=role,
                          speaker=name if isinstance(name, str) and name else default,
                          text=text, ts=ts, **fields))
    return turns


def _digest(thread_id: str, position: int, role: Role, text: str, ts: datetime) -> str:
    canonical = "\x1f".join([thread_id, str(position), role.value, text, ts.isoformat()])
    return "m-" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:24]
