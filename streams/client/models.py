"""What the client returns, beside the wire schemas of `topics/` (`Turn`, `MemoryEvent`,
`ProactivityCandidate`, `BulletItem`, `FullItem`, `TurnProgress`) and of the registry API
(`streams.api.registry_models`: `MemoryView`, `AuditEntry`, `Export`, `WriteResult`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import model_validator

from streams.api.registry_models import MemoryList, MemoryView
from topics.progress import TurnProgress
from topics.query import BulletItem, FullItem, QueryResponse
from topics.turns import Turn


@dataclass(frozen=True)
class Delivery:
    """Where a produced turn was written (acknowledged by every in-sync replica)."""

    topic: str
    partition: int
    offset: int


class QueryResult(QueryResponse):
    """A `memory.query` answer with typed items: `FullItem`s when asked with mode `full`,
    else `BulletItem`s. `context` is the text to give a model; `tokens` what it costs."""

    items: list[FullItem | BulletItem]  # type: ignore[assignment]  # parses the wire model's dict items

    @model_validator(mode="before")
    @classmethod
    def _typed_items(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("items"), list):
            model = FullItem if data.get("return") == "full" else BulletItem
            data = {**data, "items": [model.model_validate(item) for item in data["items"]]}
        return data


@dataclass(frozen=True)
class StreamReset:
    """The event stream could not resume after `last_event_id` (no longer buffered): events
    may have been missed, so re-read what you keep (the registry), then follow on."""

    last_event_id: str | None


@dataclass(frozen=True)
class TurnResult:
    """A turn sent and applied (`send_turn(..., wait=True)`, `add`): where it was written, every
    progress entry of it (`topics.progress.TurnProgress`: ingest's, then each fact's outcome —
    created, updated, superseded, duplicate, blocked, proposed, applied …) and the memories it
    made or changed, read back through the API (those the API key may see)."""

    turn: Turn
    delivery: Delivery
    progress: list[TurnProgress] = field(default_factory=list)
    memories: list[MemoryView] = field(default_factory=list)

    @property
    def outcomes(self) -> list[str]:
        """What became of each fact (or of the turn, when it gave none: skipped, dlq, …)."""
        facts = [p.outcome for p in self.progress if p.stage != "ingest"]
        return facts or [p.outcome for p in self.progress]


@dataclass(frozen=True)
class AddResult:
    """What `add` did with a list of messages: one `TurnResult` per message that was a turn,
    and the memories they made or changed, each once (mem0's `add` answer)."""

    turns: list[TurnResult]

    @property
    def memories(self) -> list[MemoryView]:
        seen: dict[str, MemoryView] = {}
        for result in self.turns:
            for memory in result.memories:
                seen[memory.id] = memory  # the later read is the newer
        return list(seen.values())


class MemoryPage(MemoryList):
    """One page of a user's memories (`list`): `total` matching before paging, `offset` of the
    first item, and `next_offset` to ask for the next page (None on the last)."""

    offset: int = 0

    @property
    def next_offset(self) -> int | None:
        end = self.offset + len(self.items)
        return end if self.items and end < self.total else None
