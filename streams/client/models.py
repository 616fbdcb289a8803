"""What the client returns, beside the wire schemas of `topics/` (`Turn`, `MemoryEvent`,
`ProactivityCandidate`, `BulletItem`, `FullItem`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import model_validator

from topics.query import BulletItem, FullItem, QueryResponse


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
