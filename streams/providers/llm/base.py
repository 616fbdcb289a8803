"""The provider contract: one raw completion per task; prompts, parsing and fallback live above it."""
from __future__ import annotations

from enum import Enum
from typing import Protocol, runtime_checkable


class Task(str, Enum):
    """The questions memstream asks a tiny LLM: three on the write path (docs/architecture.md#write-path), two in the
    background lifecycle passes (`streams/lifecycle/`: consolidation, theory-of-mind insights), one on the read
    path (the searches a question that combines facts needs: `streams/read/model_parts.py`)."""

    trigger = "trigger"
    extract = "extract"
    same_fact = "same_fact"
    consolidate = "consolidate"
    insight = "insight"
    query_parts = "query_parts"


MAX_TOKENS: dict[Task, int] = {Task.trigger: 150, Task.extract: 900, Task.same_fact: 30,
                               Task.consolidate: 200, Task.insight: 220, Task.query_parts: 160}
"""Output token caps of a call about one turn: small answers keep latency low; extraction needs
room for 3 facts."""

EACH_MORE_TURN: dict[Task, int] = {Task.trigger: 60, Task.extract: 450}
"""Output tokens added to the cap for each more turn a call asks about (a trigger item is ~40
tokens, an extraction item with its facts up to ~400)."""


def max_tokens(task: Task, turns: int = 1) -> int:
    """The output token cap of a call of `task` about `turns` turns."""
    return MAX_TOKENS[task] + EACH_MORE_TURN.get(task, 0) * max(turns - 1, 0)


@runtime_checkable
class LLMProvider(Protocol):
    """A model behind one call. Implementations map their SDK's errors to `LLMError` subclasses.

    `complete` never retries for `Task.trigger` (its budget is too small); for the other tasks it
    may retry with backoff, within `timeout_s`.
    """

    name: str
    """Short label used in metrics ("anthropic", "bedrock")."""

    model: str
    """The model (or Bedrock model id) asked."""

    sends_schema: bool
    """Whether requests carry the task's JSON schema (then the prompt need not describe it)."""

    async def complete(self, task: Task, system: str, user: str, *, timeout_s: float,
                       turns: int = 1) -> str:
        """The model's text answer to `user` under the instructions `system`; `turns` is how
        many turns it is about (the trigger and extraction), which sets its token cap
        (`max_tokens(task, turns)`) and, where a schema is sent, the number of items."""
        ...

    async def aclose(self) -> None:
        """Release connections and threads."""
        ...
