"""Named exceptions of memstream, under one root."""
from __future__ import annotations


class MemstreamError(Exception):
    """Root of memstream's own errors."""


class InvalidRecord(MemstreamError):
    """A record that cannot be processed; `reason` is a short machine-readable code."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


class BrokerError(MemstreamError):
    """The embedded broker could not be started or reached."""


class ApiError(MemstreamError):
    """The query API answered with an error."""
