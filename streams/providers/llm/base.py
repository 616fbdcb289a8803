"""The provider contract: one raw completion per task; prompts, parsing and fallback live above it."""
from __future__ import annotations

from enum import Enum
from typing import Protocol, runtime_checkable


class Task(str, Enum):
    """The questions memstream asks a tiny LLM: three on the write path (docs/architecture.md#write-path), two in the
    background lifecycle passes (`streams/lifecycle/`: consolidation, theory-of-mind insights)."""

    trigger = "trigger"
    extract = "extract"
    same_fact = "same_fact"
    consolidate = "consolidate"
    insight = "insight"


MAX_TOKENS: dict[Task, int] = {Task.trigger: 150, Task.extract: 900, Task.same_fact: 30,
                               Task.consolidate: 200, Task.insight: 220}
"""Output token caps: small answers keep latency low; extraction needs room for 3 facts."""


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

    async def complete(self, task: Task, system: str, user: str, *, timeout_s: float) -> str:
        """The model's text answer to `user` under the instructions `system`."""
        ...

    async def aclose(self) -> None:
        """Release connections and threads."""
        ...
