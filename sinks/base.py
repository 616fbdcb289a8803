"""The one sink contract every destination implements (docs/architecture.md#layout: `sinks/` one module per destination).

A destination only knows how to write one batch. Batching, flush on offset commit, retries with
backoff and jitter, backpressure and dead-lettering live in the shared runner around it, so every

destination behaves the same way.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, Sequence

from streams.errors import MemstreamError

SinkOp = Literal["upsert", "delete"]


class SinkError(MemstreamError):
    """Base of the errors a destination raises."""


class TransientSinkError(SinkError):
    """The destination is slow or down (timeout, 429, 5xx): the batch is retried with backoff."""


class PartialSinkError(TransientSinkError):
    """Part of a batch was written: only `retry` is retried; `rejected` are refused for good.

    Raised by destinations with per-item results (OpenSearch bulk: a 429 or 5xx on some items),
    so a retry rewrites neither the items already written nor the ones refused.
    """

    def __init__(self, message: str, retry: Sequence["SinkRecord"],
                 rejected: Sequence["Rejected"] = ()) -> None:
        super().__init__(message)
        self.retry = list(retry)
        self.rejected = list(rejected)


class PermanentSinkError(SinkError):
    """The destination cannot take the batch at all (bad configuration): fail loudly."""


@dataclass(frozen=True)
class SinkRecord:
    """One write to a destination.

    `key` is deterministic (memory id, or event id), so writing a record twice (a replay, a retry)
    leaves the destination as if it had been written once.
    """

    key: str
    op: SinkOp
    user_id: str
    document: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Rejected:
    """A record the destination refused for good (e.g. a mapping error): dead-lettered, not retried."""

    record: SinkRecord
    reason: str


class Destination(Protocol):
    """A place memories go: S3 Vectors, OpenSearch, ..."""

    name: str

    async def start(self) -> None:
        """Create or validate what the destination needs (index, templates) before the first write."""

    async def write(self, batch: Sequence[SinkRecord]) -> list[Rejected]:
        """Write the batch; return the records refused for good. Raise TransientSinkError to retry."""

    async def close(self) -> None:
        """Release clients."""


def is_upsert(record: SinkRecord) -> bool:
    """Whether a vector store writes the record's document, rather than removing the memory: a
    content-free tombstone (state "purged", left by the lifecycle's purge) is never copied, even
    when an event after its purge announces it again."""
    return record.op == "upsert" and (record.document or {}).get("state") != "purged"
