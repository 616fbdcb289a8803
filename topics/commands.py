"""`memory.commands`: explicit changes asked for by a user, an agent, an admin or the backend."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from topics.sealed import Sealed
from topics.times import EventTime
from topics.turns import ID_PATTERN

CommandKind = Literal[
    "forget", "dont_remember", "pin", "unpin", "edit", "delete", "restore", "purge_user",
    "block_topic", "unblock_topic", "touch", "proactivity_feedback", "consent",
]
_NEEDS = {
    "edit": ("memory_id", "text"),
    "restore": ("memory_id",),
    "block_topic": ("topic",),
    "unblock_topic": ("topic",),
    "touch": ("memory_ids",),
    "proactivity_feedback": ("feedback",),
    "consent": ("decision",),
}


class Command(BaseModel):
    """One command. `command_id` makes it idempotent: a command seen twice applies once.

    A memory is named by `memory_id`, or (forget, pin, unpin, delete) described by `query`,
    which matches the user's closest active memories.

    `consent` accepts or rejects a proposed change of a sensitive profile field
    (`streams.memory.consent`): `proposal_id` names it; without one (an acknowledgement said in
    chat, "yes, update it") it is the thread's latest proposal, if recent.

    `touch` records a read: the query API sends it with the ids it returned and `ts` = the
    read time, and the commands stage refreshes `last_accessed`/`access_count` (a read never
    writes tables from the web handler).
    """

    model_config = ConfigDict(extra="forbid")

    command_id: str = Field(min_length=1, max_length=200)
    kind: CommandKind
    user_id: str = Field(min_length=1, max_length=200, pattern=ID_PATTERN)
    ts: EventTime
    thread_id: str = Field("commands", min_length=1, max_length=200)
    turn_id: str | None = Field(None, description="The chat turn that said it, if any.")
    memory_id: str | None = None
    memory_ids: list[str] = Field(default_factory=list, max_length=100,
                                  description="touch: the memories that were read.")
    query: str | None = Field(None, max_length=2000)
    text: str | None = Field(None, max_length=280)
    topic: str | None = Field(None, max_length=200)
    proposal_id: str | None = Field(None, max_length=200, description="consent: the proposal.")
    decision: Literal["accept", "reject"] | None = Field(None, description="consent: the answer.")
    actor: str = Field("user", max_length=200)
    feedback: Literal["acted", "ignored"] | None = Field(
        None, description="proactivity_feedback: what became of the user's last proactivity "
        "candidate (an ignored one backs off the next).")
    sealed: Sealed | None = Field(
        None, description="query, text and topic, sealed for the user (then those are unset).")
    binding: str | None = Field(
        None, min_length=1, max_length=64, pattern=r"^[0-9a-f]+$",
        description="What the command's id was given for: the registry's digest of the request "
        "its Idempotency-Key named (method, path: user and memory, body; "
        "`streams.api.command_ids.binding`). A command whose id was applied for another binding "
        "is refused (`idempotency_key_reused`), never taken as a replay.")

    @model_validator(mode="after")
    def _has_its_arguments(self) -> "Command":
        if self.sealed is not None:
            if self.query or self.text or self.topic:
                raise ValueError("a sealed command carries query, text and topic only sealed")
            return self  # checked again once opened (`opened`)
        for name in _NEEDS.get(self.kind, ()):
            if not getattr(self, name):
                raise ValueError(f"{self.kind} needs {name}")
        if self.kind in ("forget", "pin", "unpin", "delete") and not (self.memory_id or self.query):
            raise ValueError(f"{self.kind} needs memory_id or query")
        return self

    def opened(self, content: dict[str, Any]) -> "Command":
        """This command with its sealed content put back (validated again)."""
        fields = self.model_dump(exclude={"sealed"})
        fields.update({k: content.get(k) for k in ("query", "text", "topic")})
        return Command.model_validate(fields)
